//! The static files the pages load: their style sheets and scripts, built
//! into the binary (the server reads no file but the ledger and spool).

/// `(media type, bytes)` of the static file `name`, if there is one.
pub(crate) fn get(name: &str) -> Option<(&'static str, &'static [u8])> {
    const CSS: &str = "text/css; charset=utf-8";
    const JS: &str = "text/javascript; charset=utf-8";
    match name {
        "page.css" => Some((CSS, crate::view::html::STYLE.as_bytes())),
        "serve.css" => Some((CSS, include_str!("assets/serve.css").as_bytes())),
        "view.js" => Some((JS, crate::view::page::SCRIPT.as_bytes())),
        "app.js" => Some((JS, include_str!("assets/app.js").as_bytes())),
        "theme.js" => Some((JS, include_str!("assets/theme.js").as_bytes())),
        _ => None,
    }
}
