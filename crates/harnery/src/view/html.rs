//! The few HTML helpers the pages share: the document around a page's
//! body, how ledger text reads inside an attribute, and how times read.
//!
//! Pages are written with `maud` templates: every value a template
//! interpolates is escaped as it is written, so ledger text (prompts, tool
//! inputs, session ids, messages) can only ever be text. Nothing here
//! writes ledger text unescaped; [`PreEscaped`] holds only this crate's
//! own constant style and script.

use maud::{DOCTYPE, PreEscaped, Render, html};

/// The style sheet every page carries inline.
pub(crate) const STYLE: &str = include_str!("page.css");

/// Ledger text for a tooltip (a `title` attribute): escaped as any value
/// is, with line breaks kept as character references so the tooltip keeps
/// its lines, and `'` referenced too.
pub(crate) struct Lines<'a>(pub &'a str);

impl Render for Lines<'_> {
    fn render_to(&self, buffer: &mut String) {
        let mut escaped = String::with_capacity(self.0.len());
        self.0.render_to(&mut escaped);
        for c in escaped.chars() {
            match c {
                '\'' => buffer.push_str("&#39;"),
                '\n' => buffer.push_str("&#10;"),
                c => buffer.push(c),
            }
        }
    }
}

/// `s` as it reads in an element's content once a template wrote it.
pub fn text(s: &str) -> String {
    html! { (s) }.into_string()
}

/// A whole document: the inline style, `body`, and the inline `script`
/// (if any) last, so it runs once everything it looks at exists.
pub(crate) fn document(title: &str, body: impl Render, script: Option<&str>) -> String {
    // Nothing on these pages is fetched, and the one script that may run is
    // the page's own, named by its hash; the policy says so to the browser.
    let script_body = script.map(|js| format!("\n{js}"));
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            "\n"
            head {
                "\n" meta charset="utf-8";
                "\n" meta http-equiv="Content-Security-Policy" content=(policy(script_body.as_deref()));
                "\n" meta name="viewport" content="width=device-width, initial-scale=1";
                "\n" title { (title) }
                "\n" style { "\n" (PreEscaped(STYLE)) }
                "\n"
            }
            "\n"
            body {
                (body)
                @if let Some(js) = &script_body {
                    script { (PreEscaped(js)) } "\n"
                }
            }
            "\n"
        }
        "\n"
    };
    page.into_string()
}

/// The page's content security policy: nothing fetched; scripts only the
/// one whose text is `script` (by its SHA-256, so a script that escaped
/// into the page from ledger text could not run), none without one.
/// Styles stay inline: the timeline places each span with a `style`
/// attribute, which no hash can name, and a style cannot run code.
pub(crate) fn policy(script: Option<&str>) -> String {
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
pub(crate) fn since(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "+" };
    let ms = ms.unsigned_abs();
    format!("{sign}{}.{:03}s", ms / 1000, ms % 1000)
}

/// A length of time for an axis tick or a tooltip: `250ms`, `1.5s`, `2m30s`.
pub(crate) fn duration(ms: u64) -> String {
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
pub(crate) fn tick_step(total_ms: u64, max_ticks: u64) -> u64 {
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

    /// `s` as it reads in a tooltip attribute once a template wrote it.
    fn attr(s: &str) -> String {
        html! { (Lines(s)) }.into_string()
    }

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
