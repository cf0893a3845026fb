// harnery view: details on hover and focus, and zoom. The page draws
// without this script; it only reacts to the reader.
(function () {
  "use strict";
  var detail = document.getElementById("detail");
  var track = document.getElementById("track");
  var level = document.getElementById("zoom-level");
  function show(event) {
    var item = event.target.closest ? event.target.closest("[title]") : null;
    if (item && track && track.contains(item)) {
      detail.textContent = item.getAttribute("title");
    }
  }
  document.addEventListener("focusin", show);
  document.addEventListener("mouseover", show);
  var zoom = 1;
  function setZoom(z) {
    zoom = Math.max(1, Math.min(256, z));
    track.style.width = zoom * 100 + "%";
    level.textContent = zoom + "×";
  }
  var buttons = document.querySelectorAll("[data-zoom]");
  for (var i = 0; i < buttons.length; i++) {
    buttons[i].addEventListener("click", function (event) {
      var z = event.currentTarget.getAttribute("data-zoom");
      setZoom(z === "fit" ? 1 : zoom * Number(z));
    });
  }
  document.addEventListener("keydown", function (event) {
    if (event.key === "+" || event.key === "=") setZoom(zoom * 2);
    else if (event.key === "-") setZoom(zoom / 2);
    else if (event.key === "0") setZoom(1);
  });
  // For tests and scripts: the script ran, over this many span marks, and
  // the page was laid out this many milliseconds after navigation began.
  var root = document.documentElement;
  root.setAttribute("data-view-spans", String(document.querySelectorAll("[data-span-id]").length));
  void document.body.getBoundingClientRect();
  root.setAttribute("data-view-laid-out-ms", performance.now().toFixed(1));
})();
