//! The few HTML helpers the pages share: escaping, the document around a
//! page's body, and how times read.
//!
//! Every piece of text that came from a ledger (prompts, tool inputs,
//! session ids, messages) goes through [`text`] or [`attr`] before it is
//! written; no page writes ledger text any other way.

use std::fmt::Write;

/// The style sheet every page carries inline.
const STYLE: &str = include_str!("page.css");

/// `s` escaped for an element's content.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` escaped for a double-quoted attribute value; line breaks kept as
/// character references so a tooltip keeps its lines.
pub fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push_str("&#10;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole document: the inline style, `body`, and the inline `script`
/// (if any) last, so it runs once everything it looks at exists.
pub fn document(title: &str, body: &str, script: Option<&str>) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // Nothing on these pages is fetched, and the one script that may run is
    // the page's own, named by its hash; the policy says so to the browser.
    let script_body = script.map(|js| format!("\n{js}"));
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        policy(script_body.as_deref())
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", text(title));
    let _ = writeln!(out, "<style>\n{STYLE}</style>\n</head>\n<body>");
    out.push_str(body);
    if let Some(body) = &script_body {
        let _ = writeln!(out, "<script>{body}</script>");
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The page's content security policy: nothing fetched; scripts only the
/// one whose text is `script` (by its SHA-256, so a script that escaped
/// into the page from ledger text could not run), none without one.
/// Styles stay inline: the timeline places each span with a `style`
/// attribute, which no hash can name, and a style cannot run code.
pub fn policy(script: Option<&str>) -> String {
    let scripts = match script {
        Some(body) => {
            use base64::Engine;
            let digest = ring::digest::digest(&ring::digest::SHA256, body.as_bytes());
            let b64 = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
            format!("'sha256-{b64}'")
        }
        None => "'none'".to_string(),
    };
    format!("default-src 'none'; style-src 'unsafe-inline'; script-src {scripts}; img-src data:")
}

/// A time since the session's start, as `show` writes it (`+1.234s`).
pub fn since(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "+" };
    let ms = ms.unsigned_abs();
    format!("{sign}{}.{:03}s", ms / 1000, ms % 1000)
}

/// A length of time for an axis tick or a tooltip: `250ms`, `1.5s`, `2m30s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
        _ => format!("{}m{}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A step for axis ticks over `total_ms`: the smallest of 1, 2, 5 × 10ⁿ ms
/// (or whole minutes) that gives at most `max_ticks` ticks.
pub fn tick_step(total_ms: u64, max_ticks: u64) -> u64 {
    let mut base = 1u64;
    loop {
        for m in [1, 2, 5] {
            let step = base * m;
            if total_ms / step < max_ticks {
                return step;
            }
        }
        base = base.saturating_mul(10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_ledger_text_stays_text() {
        assert_eq!(
            text("</script><script>alert(1)</script> & co"),
            "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"
        );
        assert_eq!(attr("a\"b'c<d>\ne&"), "a&quot;b&#39;c&lt;d&gt;&#10;e&amp;");
    }

    #[test]
    fn only_the_pages_own_script_may_run() {
        let page = document("t", "<p>x</p>", Some("let a = 1;\n"));
        let meta = page
            .lines()
            .find(|l| l.contains("Content-Security-Policy"))
            .unwrap();
        let scripts = meta.split("script-src ").nth(1).unwrap();
        assert!(!scripts.starts_with("'unsafe-inline'"), "{meta}");
        // The hash is of the script element's text, as the browser reads it.
        use base64::Engine;
        let digest = ring::digest::digest(&ring::digest::SHA256, b"\nlet a = 1;\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
        assert!(scripts.starts_with(&format!("'sha256-{b64}';")), "{meta}");
        assert!(page.contains("<script>\nlet a = 1;\n</script>"));
        let bare = document("t", "<p>x</p>", None);
        assert!(bare.contains("script-src 'none'"));
    }

    #[test]
    fn times_read_like_show_and_ticks_stay_few() {
        assert_eq!(since(1234), "+1.234s");
        assert_eq!(since(5), "+0.005s");
        assert_eq!(duration(250), "250ms");
        assert_eq!(duration(1500), "1.5s");
        assert_eq!(duration(2000), "2s");
        assert_eq!(duration(150_000), "2m30s");
        assert_eq!(tick_step(31, 10), 5);
        assert_eq!(tick_step(1000, 10), 200);
        assert_eq!(tick_step(3_600_000, 10), 500_000);
        assert_eq!(tick_step(0, 10), 1);
    }
}
