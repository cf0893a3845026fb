// harnery serve: the theme the reader picked (light or dark), applied
// before the page is drawn; without a choice the system's applies.
(function () {
  "use strict";
  try {
    var theme = localStorage.getItem("harnery-theme");
    if (theme === "dark" || theme === "light") {
      document.documentElement.setAttribute("data-theme", theme);
    }
  } catch (e) { /* storage refused: the system's theme */ }
})();
