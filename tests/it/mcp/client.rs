//! A minimal MCP client over the real `harnery mcp` process: newline-
//! delimited JSON-RPC on its stdin and stdout, a reader thread, and a
//! hang guard on every wait (generous: the machine may be loaded; no
//! figure of speed is asserted).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// How long any one answer may take before the test fails as hung.
const HANG_GUARD: Duration = Duration::from_secs(120);

pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Client {
    pub fn start(home: &Path) -> Client {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("harnery"))
            .arg("mcp")
            .env("HARNERY_HOME", home)
            .env("HARNERY_NOW", crate::common::NOW)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("harnery mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        }
    }

    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The `initialize` handshake at `version`, then `initialized`; the
    /// server's result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let result = self.request(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "harnery-test", "version": "1"},
            }),
        );
        self.send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        result
    }

    /// The whole answer (result or error) to one request.
    pub fn request_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&msg.to_string());
        loop {
            let line = self
                .lines
                .recv_timeout(HANG_GUARD)
                .unwrap_or_else(|e| panic!("no answer to {method} (id {id}): {e}"));
            let answer: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries JSON-RPC only: {e}: {line}"));
            assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
            if answer["id"] == json!(id) {
                return answer;
            }
            // Notifications and answers to lines that were not requests
            // (the parse error of a junk line) are passed over.
        }
    }

    /// The result of one request (an error answer fails the test).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request_raw(method, params);
        assert!(answer["error"].is_null(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// The result of one `tools/call`.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Close stdin; the server ends on its own, successfully.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        for _ in 0..(HANG_GUARD.as_millis() / 50) {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "harnery mcp ended with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("harnery mcp did not end when its stdin closed");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
