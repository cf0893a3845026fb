//! A headless Chromium driven over the DevTools protocol (a WebSocket),
//! for pages that live on after they load (`harnery serve`): navigate,
//! evaluate script, press keys, take screenshots, and keep every console
//! message, script error, log entry and network request the page made.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

pub struct Devtools {
    chrome: Child,
    _profile: tempfile::TempDir,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Every event the page sent, in order.
    pub events: Vec<Value>,
}

impl Drop for Devtools {
    fn drop(&mut self) {
        let _ = self.chrome.kill();
        let _ = self.chrome.wait();
    }
}

impl super::Browser {
    /// Chromium on `about:blank`, its page's console, log, runtime and
    /// network events recorded.
    pub fn devtools(&self) -> Devtools {
        let profile = tempfile::tempdir().expect("a browser profile directory");
        // `--timeout` (the one-shot modes' stop) is left out: this page lives on.
        let mut chrome = std::process::Command::new(&self.bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args([
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
            ])
            .args(["--disable-background-networking", "--hide-scrollbars"])
            // Every host name but the server's own address resolves to nothing.
            .arg("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
            .arg("--remote-debugging-port=0")
            .arg("--remote-allow-origins=*")
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let port = devtools_port(&mut chrome);
        let page = page_socket(port);
        let (ws, _) = tungstenite::connect(page.as_str()).expect("the page's devtools socket");
        let mut d = Devtools {
            chrome,
            _profile: profile,
            ws,
            next_id: 0,
            events: Vec::new(),
        };
        for domain in ["Runtime", "Log", "Network", "Page"] {
            d.call(&format!("{domain}.enable"), json!({}));
        }
        d
    }
}

/// The port Chromium's "DevTools listening on ws://…:PORT/…" line names.
fn devtools_port(chrome: &mut Child) -> u16 {
    let stderr = chrome.stderr.take().expect("chromium's stderr");
    let mut lines = BufReader::new(stderr).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("chromium says where devtools listen")
            .expect("chromium's stderr reads");
        if let Some(rest) = line.split("ws://127.0.0.1:").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    // Keep draining so Chromium never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    port
}

/// The WebSocket of the first page target (Chromium lists it a moment
/// after it starts listening).
fn page_socket(port: u16) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let body = crate::serve::support::get_plain(port, "/json/list");
        let targets: Vec<Value> = serde_json::from_str(&body).expect("the target list is JSON");
        let page = targets
            .iter()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str());
        if let Some(url) = page {
            return url.to_string();
        }
        assert!(Instant::now() < until, "chromium lists no page: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Devtools {
    /// Send `method` and wait for its result (events meanwhile are kept).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({ "id": id, "method": method, "params": params });
        self.ws
            .send(Message::text(msg.to_string()))
            .expect("devtools message sent");
        loop {
            let v = self.read(None).expect("devtools answers");
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    /// One message, waiting at most `timeout` (forever with `None`).
    fn read(&mut self, timeout: Option<Duration>) -> Option<Value> {
        if let MaybeTlsStream::Plain(s) = self.ws.get_mut() {
            s.set_read_timeout(timeout).expect("a read timeout");
        }
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    return Some(serde_json::from_str(&t).expect("JSON"));
                }
                Ok(_) => continue,
                // A signal (another test's child ending) interrupted the
                // read; nothing was lost: read again.
                Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => {
                    continue;
                }
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None;
                }
                Err(e) => panic!("devtools socket: {e}"),
            }
        }
    }

    /// Keep the events that arrive during `d`.
    pub fn pump(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.read(Some(left.max(Duration::from_millis(1)))) {
                Some(v) => self.events.push(v),
                None => break,
            }
        }
    }

    /// Go to `url` and wait for its load event.
    pub fn navigate(&mut self, url: &str) {
        let from = self.events.len();
        self.call("Page.navigate", json!({ "url": url }));
        // A hang guard only: a loaded two-core machine was seen to take
        // over 60 s for a first load while other builds ran.
        let until = Instant::now() + Duration::from_secs(120);
        while !self.events[from..]
            .iter()
            .any(|e| e["method"] == "Page.loadEventFired")
        {
            assert!(Instant::now() < until, "{url} did not load");
            self.pump(Duration::from_millis(100));
        }
        // Let the page's own scripts run their first round.
        self.pump(Duration::from_millis(300));
    }

    /// The value of `expression` in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// Press Tab once.
    pub fn tab(&mut self) {
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9 }),
            );
        }
    }

    /// A `width`×`height` PNG of the page.
    pub fn screenshot(&mut self, width: u32, height: u32) -> Vec<u8> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        self.pump(Duration::from_millis(200));
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("PNG data"))
            .expect("base64 PNG")
    }

    /// Console errors, uncaught exceptions and error log entries
    /// (a refused content security policy is one) seen so far.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                (e["method"] == "Runtime.consoleAPICalled" && e["params"]["type"] == "error")
                    || e["method"] == "Runtime.exceptionThrown"
                    || (e["method"] == "Log.entryAdded" && e["params"]["entry"]["level"] == "error")
            })
            .map(|e| e["params"].to_string())
            .collect()
    }

    /// The URL of every request the page made so far.
    pub fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .filter_map(|e| e["params"]["request"]["url"].as_str().map(String::from))
            .collect()
    }
}
