//! The mask patterns: every built-in secret shape the shipper masks
//! (category, regex, whether the match must look random), the object keys
//! whose values are masked whole, the literals a row must hold for any
//! pattern to match, and the placeholder values never taken as secrets.
//! Add a built-in pattern here; the user's own come from `[mask]` in the
//! fleet config. How they are applied is `fleet/mask.rs`.

/// Words that make an assignment's key name a secret.
const SECRET_WORDS: &str = r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key|account[_-]?key|credentials?|auth(?:orization)?|session[_-]?key|client[_-]?secret";

/// The same words in camelCase positions (`SecretAccessKey`,
/// `SessionToken`, `accessToken`).
const CAMEL_WORDS: &str = r"Password|Passwd|Passphrase|Secret|Token|ApiKey|AccessKey|PrivateKey|AccountKey|Credentials?|Auth(?:orization)?";

/// The built-in patterns: (category, regex, entropy-checked). Order
/// matters: whole blocks first, then shapes, then key/value pairs.
pub(super) fn built_in() -> Vec<(&'static str, String, bool)> {
    let key = format!(
        r"(?i:[A-Za-z0-9_.-]*?(?:{SECRET_WORDS})(?:[_.-][A-Za-z0-9_.-]*)?)|[A-Za-z0-9]*(?:{CAMEL_WORDS})(?:[A-Z][A-Za-z0-9]*)?"
    );
    let value = r#"(?:\\?"(?P<secret_dq>(?:[^"\\\n]|\\[^"\n])*)\\?"|'(?P<secret_sq>[^'\n]*)'|(?P<secret>[^\s"'=,;}\]][^\n]*))"#;
    vec![
        (
            "private-key",
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)".into(),
            false,
        ),
        (
            "putty-key",
            r"PuTTY-User-Key-File-[0-9]+:[\s\S]*?(?:Private-MAC: [0-9a-f]+|\z)".into(),
            false,
        ),
        (
            "aws-access-key-id",
            r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}".into(),
            false,
        ),
        ("github-token", r"gh[pousr]_[A-Za-z0-9]{30,}".into(), false),
        (
            "github-token",
            r"github_pat_[A-Za-z0-9_]{22,}".into(),
            false,
        ),
        ("gitlab-token", r"glpat-[A-Za-z0-9_-]{20,}".into(), false),
        ("slack-token", r"xox[abposre]-[A-Za-z0-9-]{10,}".into(), false),
        (
            "slack-webhook",
            r"hooks\.slack\.com/services/[A-Za-z0-9/]{20,}".into(),
            false,
        ),
        ("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}".into(), false),
        ("api-secret-key", r"sk-[A-Za-z0-9_-]{20,}".into(), false),
        (
            "stripe-key",
            r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}".into(),
            false,
        ),
        ("google-api-key", r"AIza[0-9A-Za-z_-]{35}".into(), false),
        (
            "google-oauth",
            r"ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[0-9A-Za-z_-]{20,}".into(),
            false,
        ),
        ("npm-token", r"npm_[A-Za-z0-9]{36}".into(), false),
        ("pypi-token", r"pypi-[A-Za-z0-9_-]{50,}".into(), false),
        ("huggingface-token", r"hf_[A-Za-z0-9]{30,}".into(), false),
        (
            "sendgrid-key",
            r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}".into(),
            false,
        ),
        ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}".into(), false),
        ("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}".into(), false),
        ("twilio-key", r"SK[0-9a-fA-F]{32}".into(), false),
        ("mailgun-key", r"key-[0-9a-zA-Z]{32}".into(), false),
        ("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}".into(), false),
        (
            "jwt",
            r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}".into(),
            false,
        ),
        (
            "url-credentials",
            r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"'<>]+:(?P<secret>[^\s@/"'<>]+)@"#.into(),
            false,
        ),
        (
            "bearer",
            r"(?i:bearer|token)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)".into(),
            true,
        ),
        (
            "basic-auth",
            r"(?i:basic)\s+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})".into(),
            true,
        ),
        (
            "netrc-password",
            r"(?i:login)\s+\S+\s+(?i:password)\s+(?P<secret>\S+)".into(),
            false,
        ),
        (
            "connection-password",
            r"(?i:password)\s+(?P<secret>[^\s]+)\s+(?i:user|host|port|dbname)=".into(),
            false,
        ),
        (
            "password-pair",
            format!(r#"(?:{key})(?:\\?["'])?\s*(?::=|=>|[=:])\s*{value}"#),
            false,
        ),
        (
            "secret-after-key",
            format!(
                r"(?i:{})\S{{0,3}}\s+(?i:is\s+|was\s+|of\s+)?(?P<secret>[A-Za-z0-9+/_.=-]{{20,}})",
                SECRET_WORDS.replace("[_-]", "[_ -]")
            ),
            true,
        ),
    ]
}

/// Object keys whose string value is masked whole.
pub(super) fn secret_key() -> String {
    format!(
        r"^(?:(?i:[A-Za-z0-9_.-]*?(?:{SECRET_WORDS})(?:[_.-][A-Za-z0-9_.-]*)?)|[A-Za-z0-9]*(?:{CAMEL_WORDS})(?:[A-Z][A-Za-z0-9]*)?)$"
    )
}

/// Literals one of which every built-in pattern needs (lower case): a row
/// without any of them (and without `\u` escapes) is not decoded at all.
pub(super) const TRIGGERS: &[&str] = &[
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "credential",
    "auth",
    "bearer",
    "basic",
    "login",
    "akia",
    "asia",
    "agpa",
    "aida",
    "aroa",
    "anpa",
    "anva",
    "aipa",
    "gh",
    "glpat",
    "xox",
    "sk-",
    "sk_",
    "rk_",
    "pk_",
    "whsec_",
    "aiza",
    "ya29",
    "gocspx",
    "npm_",
    "pypi-",
    "hf_",
    "sg.",
    "_v1_",
    "shp",
    "sk",
    "eyj",
    "://",
    "-----begin",
    "putty",
];

/// Values taken as placeholders, never as secrets.
pub(super) const BUILT_IN_ALLOW: &[&str] = &[
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?",
    r"\{\{[^}]*\}\}",
    r"<[^<>]*>",
    r"\*+|x+|X+|\.\.\.|…|-|null|None|nil|true|false|undefined|string|str|bool|int|number",
    r"\[masked:[a-z0-9-]+:[0-9a-f]+\]",
    r"\[masked:[a-z0-9-]+:[0-9a-f]+\][\s\S]*",
];
