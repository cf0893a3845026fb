//! `fleet usage` counts each session as `harnery usage` does on the host,
//! against a real, throwaway PostgreSQL (see `fleet_support`): unrelated
//! sessions that reuse message ids each keep their tokens, a fork's and a
//! `restore --apply` session's copies are inherited, a fork's cost is its
//! own, no count is `null`, and no host's rows move another's figures;
//! under every `--content` mode. The expectation is the host's own
//! `usage --json`, per session.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{self, stderr, stdout};
use crate::fleet::support::PgServer;
use crate::fleet::support::host_id;
use crate::report::usage_copies::{fork_pair, four_sessions_sharing_ids, restored_child};

/// One session's figures: records, the four token kinds, the cost, and
/// the inherited records.
#[derive(Debug, Clone, PartialEq)]
struct Figures {
    records: u64,
    tokens: [Option<u64>; 4],
    cost: Option<f64>,
    inherited: u64,
}

/// Costs are sums to ten decimal places on the host and exact on the
/// server: equal within that.
fn same(a: &Figures, b: &Figures) -> bool {
    let cost = match (a.cost, b.cost) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        (x, y) => x == y,
    };
    cost && Figures {
        cost: None,
        ..a.clone()
    } == Figures {
        cost: None,
        ..b.clone()
    }
}

/// The host's `usage --json`, by session id.
fn local(out: std::process::Output) -> BTreeMap<String, Figures> {
    assert!(out.status.success(), "usage: {}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let key = g["key"].as_str().unwrap();
            let session = key.split_once('/').unwrap().1.to_string();
            let t = &g["tokens"];
            let figures = Figures {
                records: g["records"].as_u64().unwrap(),
                tokens: ["input", "output", "cache_read", "cache_write"].map(|k| t[k].as_u64()),
                cost: g["reported_cost"].as_f64(),
                inherited: g["inherited_records"].as_u64().unwrap_or(0),
            };
            (session, figures)
        })
        .collect()
}

/// A row of `fleet usage --json` (either grouping) as figures; a row
/// that lists no inherited records has none.
fn row(r: &Value) -> Figures {
    let count = |k: &str| r[k].as_u64();
    Figures {
        records: count("records").unwrap(),
        tokens: [
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        ]
        .map(count),
        cost: r["cost"].as_str().map(|c| c.parse().unwrap()),
        inherited: count("inherited_records").unwrap_or(0),
    }
}

/// `fleet usage --by session --json` for `host`, by session id.
fn fleet(target: &str, host: &str) -> BTreeMap<String, Figures> {
    let out = common::harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", "usage", "--from", target, "--host", host])
        .args(["--by", "session", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "fleet usage: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|line| {
            let r: Value = serde_json::from_str(line).unwrap();
            (r["session_id"].as_str().unwrap().to_string(), row(&r))
        })
        .collect()
}

/// The content modes, each shipped to its own database of one server.
const CONTENTS: [&str; 3] = ["full", "masked", "none"];

/// Ship `home` (through `harnery`, its command) to the database of each
/// `--content` mode (`targets`, as [`CONTENTS`]), and check every session's fleet figures against the
/// host's own.
fn ships_as_counted(
    targets: &[String; 3],
    home: &Path,
    harnery: impl Fn(&[&str]) -> std::process::Output,
) -> BTreeMap<String, Figures> {
    let want = local(harnery(&["usage", "--json"]));
    assert!(!want.is_empty());
    for (session, f) in &want {
        assert!(
            f.records == 0 || f.tokens.iter().all(Option::is_some),
            "{session}: no count is null on the host: {f:?}"
        );
    }
    for (content, target) in CONTENTS.iter().zip(targets) {
        let target = target.as_str();
        let out = harnery(&["ship", "--to", target, "--content", content]);
        assert!(out.status.success(), "ship: {}", stderr(&out));
        let got = fleet(target, &host_id(home));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "--content {content}"
        );
        for (session, w) in &want {
            let g = &got[session];
            assert!(
                same(g, w),
                "--content {content}, {session}: the fleet counts {g:?}, the host {w:?}"
            );
        }
        // By day and model (the default grouping), the same sums.
        let by_day = by_day(target, &host_id(home));
        let whole = Figures {
            inherited: 0,
            ..sum(want.values())
        };
        assert!(
            same(&by_day, &whole),
            "--content {content}: by day {by_day:?}, the host {whole:?}"
        );
    }
    want
}

/// The sum of `figures` (a kind absent where every one lacks it).
fn sum<'a>(figures: impl Iterator<Item = &'a Figures>) -> Figures {
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let addf = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    figures.fold(
        Figures {
            records: 0,
            tokens: [None; 4],
            cost: None,
            inherited: 0,
        },
        |s, f| Figures {
            records: s.records + f.records,
            tokens: [0, 1, 2, 3].map(|i| add(s.tokens[i], f.tokens[i])),
            cost: addf(s.cost, f.cost),
            inherited: s.inherited + f.inherited,
        },
    )
}

/// `fleet usage --json` (by day and model) for `host`, summed (that
/// grouping lists no inherited records).
fn by_day(target: &str, host: &str) -> Figures {
    let out = common::harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", "usage", "--from", target, "--host", host, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "fleet usage: {}", stderr(&out));
    let rows: Vec<Figures> = stdout(&out)
        .lines()
        .map(|line| {
            let r: Value = serde_json::from_str(line).unwrap();
            row(&r)
        })
        .collect();
    sum(rows.iter())
}

fn run(home: &Path) -> impl Fn(&[&str]) -> std::process::Output + '_ {
    move |args: &[&str]| {
        common::harnery(home)
            .env("HARNERY_RECORDS", "on")
            .args(args)
            .output()
            .unwrap()
    }
}

#[test]
fn fleet_usage_counts_each_session_as_the_host_does() {
    let pg = PgServer::start();
    let targets = CONTENTS.map(|c| pg.database(&format!("usage_{c}")));

    // (a) Four unrelated sessions sharing message ids, on two hosts: each
    // session keeps its tokens, on either host.
    let mut shared = Vec::new();
    for _ in 0..2 {
        let home = tempfile::tempdir().unwrap();
        four_sessions_sharing_ids(home.path());
        let figures = ships_as_counted(&targets, home.path(), run(home.path()));
        assert_eq!(figures.len(), 4);
        let first = figures.values().next().unwrap().clone();
        assert!(first.records > 0, "{first:?}");
        assert!(figures.values().all(|f| *f == first), "{figures:#?}");
        shared.push(home);
    }

    // (b) A real fork pair: the fork's copies inherited, its cost its own.
    let home = tempfile::tempdir().unwrap();
    let [parent_total, fork_total] = fork_pair(home.path());
    let figures = ships_as_counted(&targets, home.path(), run(home.path()));
    let fork = &figures[crate::report::usage_copies::FORK_CHILD];
    assert!(fork.inherited > 0, "{fork:?}");
    let own = fork.cost.unwrap();
    assert!((own - (fork_total - parent_total)).abs() < 1e-9, "{fork:?}");

    // (c) A `restore --apply` child: its copies of the parent's first
    // turn inherited, its own turn counted.
    let w = crate::restore::apply::claude_world();
    let restored = restored_child(&w);
    let figures = ships_as_counted(&targets, w.home.path(), |args| w.harnery(args));
    let child = &figures[&restored.child];
    assert!(child.inherited > 0 && child.records > 0, "{child:?}");
}
