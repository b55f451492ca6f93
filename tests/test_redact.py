"""Secret redaction: every kind is caught in every form text takes (plain, on a later line, after
a tab, quoted, inside JSON a tool printed, in .env/shell/YAML/INI assignments), ordinary text is
left alone (the very same objects come back), markers replace the secret and nothing more, file
names that are not UTF-8 come out as U+FFFD, and no secret planted in any agent's store survives
into what trajectoriz outputs."""

import copy
import hashlib
import hmac
import json
import os
import random
import sqlite3
import string

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atif.serialize import dumps
from discovery import catalog
from helpers import assert_valid, cli, run_main
from homes import agent_homes, by_agent
from redaction import redact as redact_module
from redaction.redact import clean_tree, marker, redact_text
from test_redact_oracle import PRESENTATIONS, payload

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rand(n: int, alphabet: str = ALNUM, seed: object = 0) -> str:
    """A random-looking string, the same on every run."""
    rng = random.Random(f"{seed}/{n}/{alphabet}")
    return "".join(rng.choice(alphabet) for _ in range(n))


# (kind, secret): every shape with a prefix of its own.
TOKENS = [
    ("anthropic", "sk-ant-api03-" + rand(93, URLSAFE, 1) + "AA"),
    ("anthropic", "sk-ant-oat01-" + rand(95, URLSAFE, 2)),
    ("openai", "sk-proj-" + rand(156, URLSAFE, 3)),
    ("openai", "sk-" + rand(48, ALNUM, 4)),
    ("openai", "sk-svcacct-" + rand(64, URLSAFE, 5)),
    ("openai", "sk-admin-" + rand(64, URLSAFE, 6)),
    ("openrouter", "sk-or-v1-" + rand(64, HEX, 7)),
    ("stripe", "sk_live_" + rand(99, ALNUM, 8)),
    ("stripe", "sk_test_" + rand(24, ALNUM, 9)),
    ("stripe", "rk_live_" + rand(24, ALNUM, 10)),
    ("stripe", "whsec_" + rand(32, ALNUM, 11)),
    ("google", "AIza" + rand(35, URLSAFE, 12)),
    ("google_oauth", "ya29." + rand(100, URLSAFE, 13)),
    ("google_oauth", "GOCSPX-" + rand(28, URLSAFE, 14)),
    ("aws", "AKIA" + rand(16, UPPER, 15)),
    ("aws", "ASIA" + rand(16, UPPER, 16)),
    *[("github", prefix + rand(36, ALNUM, prefix)) for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")],
    ("github", "github_pat_" + rand(22, ALNUM, 17) + "_" + rand(59, ALNUM, 18)),
    *[("gitlab", prefix + rand(20, URLSAFE, prefix)) for prefix in ("glpat-", "gldt-", "glrt-", "glptt-", "gloas-")],
    ("gitlab", "GR1348941" + rand(20, URLSAFE, 19)),
    ("slack", "xoxb-" + rand(12, string.digits, 20) + "-" + rand(13, string.digits, 21) + "-" + rand(24, ALNUM, 22)),
    ("slack", "xoxp-" + rand(12, string.digits, 23) + "-" + rand(13, string.digits, 24) + "-" + rand(32, HEX, 25)),
    ("slack", "xapp-1-A" + rand(10, UPPER, 26) + "-" + rand(13, string.digits, 27) + "-" + rand(64, HEX, 28)),
    ("slack", "hooks.slack.com/services/T" + rand(8, UPPER, 29) + "/B" + rand(8, UPPER, 30) + "/" + rand(24, ALNUM, 31)),
    ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
     + rand(43, URLSAFE, 32)),
    ("npm", "npm_" + rand(36, ALNUM, 33)),
    ("huggingface", "hf_" + rand(34, string.ascii_letters, 34)),
    ("pypi", "pypi-AgEIcHlwaS5vcmc" + rand(70, URLSAFE, 35)),
    ("docker", "dckr_pat_" + rand(27, URLSAFE, 36)),
    ("digitalocean", "dop_v1_" + rand(64, HEX, 37)),
    ("shopify", "shpat_" + rand(32, HEX, 38)),
    ("sendgrid", "SG." + rand(22, URLSAFE, 39) + "." + rand(43, URLSAFE, 40)),
    ("twilio", "SK" + rand(32, HEX, 41)),
    ("mailgun", "key-" + rand(32, HEX, 42)),
    ("vault", "hvs." + rand(90, URLSAFE, 43)),
    ("grafana", "glsa_" + rand(32, ALNUM, 44) + "_" + rand(8, HEX, 45)),
    ("grafana", "glc_" + rand(60, ALNUM + "+/", 46)),
    ("sentry", "sntrys_" + rand(80, ALNUM + "+/=", 47)),
    ("sentry", "sntryu_" + rand(64, HEX, 48)),
    ("databricks", "dapi" + rand(32, HEX, 49)),
    ("linear", "lin_api_" + rand(40, ALNUM, 50)),
    ("postman", "PMAK-" + rand(24, HEX, 51) + "-" + rand(34, HEX, 52)),
    ("age", "AGE-SECRET-KEY-1" + rand(58, BECH32, 53)),
    ("groq", "gsk_" + rand(52, ALNUM, 54)),
    ("xai", "xai-" + rand(80, ALNUM, 55)),
    ("perplexity", "pplx-" + rand(48, ALNUM, 56)),
    ("replicate", "r8_" + rand(37, ALNUM, 57)),
    ("tavily", "tvly-" + rand(32, ALNUM, 58)),
    ("tavily", "tvly-dev-" + rand(32, ALNUM, 59)),
    ("doppler", "dp.pt." + rand(43, string.ascii_lowercase + string.digits, 60)),
    ("atlassian", "ATATT3xFfGF0" + rand(180, URLSAFE + "=", 61)),
    ("heroku", "HRKU-" + rand(60, URLSAFE, 62)),
    ("newrelic", "NRAK-" + rand(27, UPPER, 63)),
    ("pulumi", "pul-" + rand(40, HEX, 64)),
    ("planetscale", "pscale_tkn_" + rand(43, URLSAFE, 65)),
    ("square", "sq0atp-" + rand(22, URLSAFE, 66)),
    ("supabase", "sbp_" + rand(40, HEX, 67)),
    ("notion", "ntn_" + rand(11, string.digits, 68) + rand(35, ALNUM, 69)),
    ("notion", "secret_" + rand(43, ALNUM, 70)),
    ("azure", rand(3, ALNUM, 71) + "8Q~" + rand(31, URLSAFE + "~.", 72)),
]
# Where text puts a secret: each takes the text and puts it in context.
CONTEXTS = {
    "plain": lambda t: f"the key is {t} ok",
    "later line": lambda t: f"first line\nsecond line {t}\nthird line",
    "after a tab": lambda t: f"name\tvalue\nprod\t{t}",
    "single quotes": lambda t: f"x = '{t}'",
    "double quotes": lambda t: f'x = "{t}"',
    "JSON a tool printed": lambda t: json.dumps({"output": f"A=1\n{t}\nB=2"}, ensure_ascii=False),
    "JSON in JSON a tool printed": lambda t: json.dumps({"result": json.dumps({"output": f"A=1\n{t}"}, ensure_ascii=False)},
                                                        ensure_ascii=False),
    "escaped line": lambda t: f"{{\"a\": 1}}\\n{t}\\n",
    "YAML": lambda t: f"config:\n  value: {t}\n",
    "INI": lambda t: f'[section]\nvalue = "{t}"\n',
    ".env": lambda t: f"HOST=db\nVALUE={t}\n",
    "shell": lambda t: f"export VALUE={t}; run",
}
# (kind, text, secret): secrets that are part of a larger shape, which stays.
PASSWORD = "Tr0ub4dor#3x"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + rand(10, ALNUM + "/+", 80)
SHAPES = [
    ("url_password", f"postgres://admin:{PASSWORD}@db.internal:5432/app", PASSWORD),
    ("url_password", f"redis://:{PASSWORD}@cache:6379/0", PASSWORD),
    ("url_password", "https%3A%2F%2Fdeploy%3ATr0ub4dor%233x%40example.com%2Fhook", "Tr0ub4dor%233x"),
    ("authorization", "Authorization: Bearer Zq8Wx2Lm5Rt9Qa3Vb7Nc", "Zq8Wx2Lm5Rt9Qa3Vb7Nc"),
    ("authorization", "authorization: token Zq8Wx2Lm5Rt9Qa3Vb7Nc", "Zq8Wx2Lm5Rt9Qa3Vb7Nc"),
    ("authorization", "curl -H 'Authorization: Basic dXNlcjpodW50ZXIy' https://x", "dXNlcjpodW50ZXIy"),
    ("authorization", '{"Authorization": "Bearer Zq8Wx2Lm5Rt9Qa3Vb7Nc"}', "Zq8Wx2Lm5Rt9Qa3Vb7Nc"),
    ("password", f"mysql -uroot -p{PASSWORD} app", PASSWORD),
    ("password", f"mysqldump -h db -P 3306 -u root -p'{PASSWORD}' app > dump.sql", PASSWORD),
    ("password", f'mariadb --user=app -p"{PASSWORD}" app', PASSWORD),
    ("password", f"mysql --user=app --password={PASSWORD} app", PASSWORD),
    ("password", f"sshpass -p {PASSWORD} ssh deploy@host", PASSWORD),
    ("password", f"sshpass -p'{PASSWORD}' scp a host:", PASSWORD),
    ("password", f"docker login -u me -p {PASSWORD} registry.example.com", PASSWORD),
    ("password", f"curl -u admin:{PASSWORD} https://api.example.com", PASSWORD),
    ("password", f"machine api.example.com login me password {PASSWORD}", PASSWORD),
    ("password", f"machine api.example.com\n  login me\n  password {PASSWORD}\n", PASSWORD),
    ("password", f"Server=db;User Id=sa;Password={PASSWORD};TrustServerCertificate=true", PASSWORD),
    ("password", f"[client]\npassword: {PASSWORD}\nuser: app", PASSWORD),
    ("aws_secret", f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {AWS_SECRET}\n",
     AWS_SECRET),
    ("aws_secret", f'"SecretAccessKey": "{AWS_SECRET}",', AWS_SECRET),
    ("azure", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + rand(86, ALNUM + "+/", 81)
     + "==;EndpointSuffix=core.windows.net", rand(86, ALNUM + "+/", 81) + "=="),
    ("azure", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey="
     + rand(43, ALNUM + "+/", 82) + "=", rand(43, ALNUM + "+/", 82) + "="),
    ("telegram", "bot 123456789:AA" + rand(33, URLSAFE, 83) + " ready", "AA" + rand(33, URLSAFE, 83)),
    ("discord", "https://discord.com/api/webhooks/123456789012345678/" + rand(68, URLSAFE, 84),
     "123456789012345678/" + rand(68, URLSAFE, 84)),
]
SHAPE_CONTEXTS = ["plain", "later line", "after a tab", "JSON a tool printed", "JSON in JSON a tool printed",
                  "escaped line"]
# Assignments: each name with each syntax, in context.
TOKEN_NAMES = ["API_KEY", "MY_API_TOKEN", "DEPLOY_TOKEN", "GITHUB_TOKEN", "OPENAI_KEY", "api_key", "apiKey",
               "ApiKey", "x-api-key", "token", "secret", "client_secret", "clientSecret", "access_token",
               "refresh_token", "auth_token", "authToken", "_authToken", "private_key", "secret_key",
               "SECRET_KEY", "credentials", "auth", "app_secret", "jwt_secret", "bot_token", "id_token"]
PASSWORD_NAMES = ["password", "PASSWORD", "passwd", "DB_PASSWORD", "db_pass", "DB_PASS", "PGPASSWORD", "pwd",
                  "passphrase", "smtpPassword", "spring.datasource.password"]
AWS_NAMES = ["aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey"]
SYNTAXES = {
    ".env": lambda n, v: f"{n}={v}",
    "shell": lambda n, v: f"export {n}={v}",
    "shell quoted": lambda n, v: f'export {n}="{v}"',
    "YAML": lambda n, v: f"{n}: {v}",
    "YAML quoted": lambda n, v: f"{n}: '{v}'",
    "INI": lambda n, v: f"{n} = {v}",
    "TOML": lambda n, v: f'{n} = "{v}"',
    "JSON": lambda n, v: f'"{n}": "{v}"',
    "Python dict": lambda n, v: f"'{n}': '{v}'",
    "Go": lambda n, v: f'{n} := "{v}"',
    "PHP": lambda n, v: f"'{n}' => '{v}'",
    "flag": lambda n, v: f"--{n}={v}",
}
ASSIGNMENT_CONTEXTS = {
    "alone": lambda a: a,
    "later line": lambda a: f"HOST=db\n{a}\nPORT=5432",
    "indented": lambda a: f"database:\n  {a}\n  port: 5432",
    "after a tab": lambda a: f"env:\n\t{a}",
    "JSON a tool printed": lambda a: json.dumps({"output": f"A=1\n{a}\nB=2"}, ensure_ascii=False),
    "JSON in JSON a tool printed": CONTEXTS["JSON in JSON a tool printed"],
}
VALUES = {"assignment": "Zq8Wx2Lm5Rt9Qa3Vb7Nc", "password": PASSWORD, "aws_secret": AWS_SECRET}

# Ordinary text: none of it may change.
BENIGN = [
    "risk-assessment-for-production-systems.md", "task-runner-configuration-file-v2",
    "see ask-the-expert, desk-booking-system-v3 and sk-learn-tutorial-part-2",
    'SORT_KEY = "created_at"', "CACHE_KEY=user_profile_cache",
    "PUBLIC_KEY=ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host",
    "sort_key", "primary_key", "max_tokens=4096", "input_tokens: 1234", '"prompt_tokens": 812',
    "$VAR", "API_KEY=$OPENAI_API_KEY", "TOKEN=${GITHUB_TOKEN}", 'api_key: "<your key>"', 'password: "***"',
    "OPENAI_API_KEY=your-api-key-here", "SECRET_KEY=changeme", "export STRIPE_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b", "git checkout 3f78685",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request 550e8400-e29b-41d4-a716-446655440000",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA8xYzLb2P0bU5W8kQn3m user@host",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
    "if line.startswith('-----BEGIN RSA PRIVATE KEY-----'):",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
    "build-docker-image-for-arm64 get_user_by_id_v2 fetchUserProfileById parse_utf8_bytes",
    "Authorization: Bearer $TOKEN", "Authorization: Bearer <token>", "-H 'Authorization: Bearer ${API_TOKEN}'",
    'headers = {"Authorization": f"Bearer {token}"}', "Authorization: Bearer YOUR_API_KEY",
    "password = getpass()", 'token = os.environ["GH_TOKEN"]', "api_key=api_key", "apiKey: process.env.KEY",
    "password: str", "password: Optional[str] = None", "def login(username, password):",
    "if password == confirm_password:", "token = tokenizer.encode(text)", "secret = secrets.token_hex(32)",
    "token: string;", "const apiKey = config.apiKey;", "password = request.form['password']",
    "self.api_key = api_key", "password = user_password", "password: userPassword", "password = None",
    "PWD=/home/user/project OLDPWD=/tmp", "ssh_key = ~/.ssh/id_ed25519",
    "https://example.com:8080/path@v2", "git@github.com:user/repo.git", "ssh://git@github.com/user/repo",
    "postgres://user:password@localhost/db", "postgres://user:${DB_PASSWORD}@db/app",
    "mysql -u root -p", "mysql -h db -P 3306 -u root -p mydb", "mysql -u root -p$MYSQL_ROOT_PASSWORD",
    "docker run -p 8080:80 nginx", "sshpass -f ~/.pw ssh host", "curl -u $USER:$PASS https://x",
    "echo $PW | docker login --password-stdin", "Use --password-stdin to pipe it",
    "the token limit is 8192 tokens", "Token budget: 200000", "the secret sauce", "key: value",
    "primary key (id)", "keyboard shortcuts", "monkey: banana", "bypass: true", "password reset link",
    "pass: 12 fail: 0", 'eos_token="</s>"', 'pad_token = "<pad>"',
    "next_page_token: CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA0ZmM2OTIwMBAB",
    "idempotency_key: 8e03978e-40d5-43e8-bc93-6894a57f9324", "partition_key = 'tenant#2024'",
    "model: claude-3-5-sonnet-20241022, gpt-4o-mini-2024-07-18", "version = python3.11",
    "The ASIAN markets and MAKIAGE", "heyJude and eyJ alone", "AKIAIOSFODNN7EXAMPLE",
    "skeleton-key-generator", "key-value store", "api-key-rotation.md", "token-bucket algorithm",
    "ghp_ and glpat- are prefixes", "Bearer tokens expire", "dapi is a prefix",
    "12:30:45 and 10.0.0.1:8080 and C:\\new\\tmp", "phone +1 555 0100",
    "the aws_secret_access_key setting", "export AWS_SECRET_ACCESS_KEY",
    # found by running the redaction over the Python library and node's packages
    "exports.Socks5Auth = Socks5Auth", "private_key = Ed25519PrivateKey.generate()",
    "token = base64.urlsafe_b64encode(digest)", '"Resource":"arn:aws:secretsmanager:*:*:secret:aws/ssm/3p/*"',
    'raise TypeError("pwd: expected bytes, got %s" % type(pwd).__name__)', '"passwd:gecos",',
    "def unix_getpass(prompt='Password: ', stream=None):", 'FORCE_CHANGE_PASSWORD = "FORCE_CHANGE_PASSWORD"',
    '"AWS::Config::AggregationAuthorization": "af318b77aaceeeaa"',
    '"ClientRequestToken": "a8ca07e4-61ec-4399-99f4-19853801bcd5"', "CancellationToken token = default;",
    '"IAMUserChangePassword": "arn:aws:iam::aws:policy/IAMUserChangePassword"',
    '"KeyStorePassword": "The password for the kmsuser crypto user in the CloudHSM cluster."',
    '"PrivateKey": "-----BEGIN RSA PRIVATE KEY-----\\nkey omitted for security reasons\\n-----END RSA PRIVATE KEY-----"',
    'key="-----BEGIN PRIVATE KEY-----\\nXXXX\\nXXXX\\n-----END PRIVATE KEY-----"',
    '"output_token": "NextMarker || Contents[-1].Key"', '"output_token": "Jobs[-1].JobId"',
    "'opaquelocktoken': 'RFC 2518'",
]


def each_secret_in_each_context():
    for kind, secret in TOKENS:
        for context in CONTEXTS:
            yield pytest.param(kind, secret, context, id=f"{kind}-{secret[:10]}-{context}")


@pytest.mark.parametrize("kind,secret,context", list(each_secret_in_each_context()))
def test_each_prefixed_kind_is_caught_in_every_context(kind, secret, context):
    place = CONTEXTS[context]
    assert redact_text(place(secret)) == (place(marker(kind, secret)), {kind: 1})


@pytest.mark.parametrize("kind,text,secret", SHAPES, ids=[f"{k}-{t[:24]}" for k, t, _ in SHAPES])
def test_a_secret_inside_a_shape_is_replaced_and_the_shape_stays(kind, text, secret):
    for context in SHAPE_CONTEXTS:
        place = CONTEXTS[context] if context != "plain" else (lambda t: t)
        expected = place(text.replace(secret, marker(kind, secret)))
        assert redact_text(place(text)) == (expected, {kind: 1}), context


def assignment_cases():
    for kind, names in (("assignment", TOKEN_NAMES), ("password", PASSWORD_NAMES), ("aws_secret", AWS_NAMES)):
        for name in names:
            yield pytest.param(kind, name, id=f"{kind}-{name}")


@pytest.mark.parametrize("kind,name", list(assignment_cases()))
def test_an_assigned_secret_is_caught_in_every_syntax_and_context(kind, name):
    value = VALUES[kind]
    missed = []
    for syntax, assign in SYNTAXES.items():
        for context, place in ASSIGNMENT_CONTEXTS.items():
            text = place(assign(name, value))
            expected = (place(assign(name, marker(kind, value))), {kind: 1})
            if redact_text(text) != expected:
                missed.append(f"{syntax} / {context}: {redact_text(text)[0]!r}")
    assert missed == []


@pytest.mark.parametrize("flag", ["--token", "--api-key", "--password", "--client-secret", "--auth-token"])
def test_a_flag_followed_by_its_value(flag):
    kind = "password" if "password" in flag else "assignment"
    value = VALUES[kind]
    assert redact_text(f"tool login {flag} {value} --verbose") == (
        f"tool login {flag} {marker(kind, value)} --verbose", {kind: 1})


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_text_comes_back_as_the_very_same_string(text):
    out, counts = redact_text(text)
    assert out is text and counts == {}


def test_ordinary_text_and_real_sessions_come_back_as_the_very_same_objects(tmp_path):
    """The ordinary text above in a tree (keys too), and the documents of real sessions of every
    agent (tests/fixtures/samples/live), in which nothing is a secret."""
    from rendering import documents
    from helpers import LIVE, base_env

    tree = {"steps": [{"message": text, "extra": {text[:20]: [text, 1, 2.5, None, True]}} for text in BENIGN]}
    trees = [tree]
    for store in sorted(os.listdir(LIVE)):
        if os.path.isdir(os.path.join(LIVE, store)):
            env = base_env(tmp_path / store, home=os.path.join(LIVE, store))
            trees += [documents._translated(session, env) for session in catalog.discover(env).sessions]
    assert len(trees) > 30
    before = copy.deepcopy(trees)
    for doc in trees:
        out, counts = clean_tree(doc)
        assert out is doc and counts == {}
    assert trees == before


def test_counts_are_per_kind():
    github, npm = dict(TOKENS)["github"], dict(TOKENS)["npm"]
    text = f"{github} then {npm}\nDEPLOY_TOKEN=Zq8Wx2Lm5Rt9\npassword: {PASSWORD}\nagain {github}"
    out, counts = redact_text(text)
    assert counts == {"github": 2, "npm": 1, "assignment": 1, "password": 1}
    assert out == (f"{marker('github', github)} then {marker('npm', npm)}\n"
                   f"DEPLOY_TOKEN={marker('assignment', 'Zq8Wx2Lm5Rt9')}\npassword: {marker('password', PASSWORD)}\n"
                   f"again {marker('github', github)}")


def test_the_same_secret_gets_the_same_marker_everywhere():
    secret = dict(TOKENS)["stripe"]
    tree = {"a": f"key {secret}", "b": [f"name\t{secret}!", {secret: "x"}], "c": f"A=1\nB={secret}"}
    out, counts = clean_tree(tree)
    mark = marker("stripe", secret)
    assert out == {"a": f"key {mark}", "b": [f"name\t{mark}!", {mark: "x"}], "c": f"A=1\nB={mark}"}
    assert counts == {"stripe": 4}
    keyed = hmac.new(redact_module.marker_key(), b"\0" + secret.encode(), hashlib.sha256).hexdigest()[:8]
    assert mark == f"«REDACTED:stripe:{keyed}»"
    with redact_module.markers_of("claude:session"):
        assert clean_tree(tree)[0] != out and marker("stripe", secret) != mark


@pytest.mark.parametrize("text,secret,kind", [
    ("token=ghp_" + rand(36, ALNUM, 90) + ", next", "ghp_" + rand(36, ALNUM, 90), "github"),
    ('say "sk-proj-' + rand(40, URLSAFE, 91) + '".', "sk-proj-" + rand(40, URLSAFE, 91), "openai"),
    ("postgres://admin:Vx7Qm2Tz9@db:5432/app?sslmode=require", "Vx7Qm2Tz9", "url_password"),
    ("Authorization: Bearer Zq8Wx2Lm5Rt9Qa3V\r\nHost: api.example.com", "Zq8Wx2Lm5Rt9Qa3V", "authorization"),
    ("DB_PASSWORD=hunter22 # the old one", "hunter22", "password"),
    ("mysql -pS3cretPw db_name < dump.sql", "S3cretPw", "password"),
    ("(AKIA" + rand(16, UPPER, 92) + ")", "AKIA" + rand(16, UPPER, 92), "aws"),
    ("MY_KEY_AKIA" + rand(16, UPPER, 93) + " set", "AKIA" + rand(16, UPPER, 93), "aws"),
    ("A=1\nMY_API_TOKEN=abcdef0123456789\nB=2", "abcdef0123456789", "assignment"),
])
def test_a_marker_replaces_the_secret_and_nothing_else(text, secret, kind):
    assert redact_text(text) == (text.replace(secret, marker(kind, secret)), {kind: 1})


def test_escaped_lines_of_a_printed_env_file_are_each_caught():
    stripe = "sk_live_" + rand(24, ALNUM, 94)
    text = f"A=1\\nDB_PASSWORD=hunter2x\\n\\t{stripe}\\n"
    assert redact_text(text) == (
        f"A=1\\nDB_PASSWORD={marker('password', 'hunter2x')}\\n\\t{marker('stripe', stripe)}\\n",
        {"password": 1, "stripe": 1})


KEY_LINES = [rand(64, ALNUM + "+/", 100 + i) for i in range(3)] + [rand(20, ALNUM + "+/", 104) + "=="]


@pytest.mark.parametrize("begin,end", [
    ("-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----"),
    ("-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"),
    ("-----BEGIN ENCRYPTED PRIVATE KEY-----", "-----END ENCRYPTED PRIVATE KEY-----"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----"),
])
def test_a_private_key_block_becomes_one_marker(begin, end):
    block = "\n".join([begin, *KEY_LINES, end])
    for context in ("plain", "later line", "JSON a tool printed", "escaped line"):
        text = CONTEXTS[context](block)
        seen = json.dumps(block)[1:-1] if context == "JSON a tool printed" else block  # `\n` escapes
        assert redact_text(text) == (text.replace(seen, marker("private_key", seen)), {"private_key": 1}), context


def test_an_encrypted_pem_with_headers_and_a_pgp_block_with_a_checksum():
    pem = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED",
                     "DEK-Info: AES-128-CBC,3F17F5316E2BAC89", "", *KEY_LINES, "-----END RSA PRIVATE KEY-----"])
    pgp = "\n".join(["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", *KEY_LINES, "=Xy7Q",
                     "-----END PGP PRIVATE KEY BLOCK-----"])
    for block in (pem, pgp):
        assert redact_text(f"cat key\n{block}\ndone") == (f"cat key\n{marker('private_key', block)}\ndone",
                                                          {"private_key": 1})


def test_a_private_key_with_no_end_line_loses_its_lines_and_nothing_after():
    """A BEGIN with no END used to swallow the next 20,000 characters."""
    key = "\n".join(["-----BEGIN OPENSSH PRIVATE KEY-----", *KEY_LINES])
    after = "\nThat was the key.\n" + "more text " * 2000
    assert redact_text(key + after) == (marker("private_key", key) + after, {"private_key": 1})
    cut = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES[:2]])
    assert redact_text(f"$ head -3 id_rsa\n{cut}\n$ ls") == (
        f"$ head -3 id_rsa\n{marker('private_key', cut)}\n$ ls", {"private_key": 1})


def test_lone_surrogates_become_replacement_characters_with_and_without_redaction():
    """File names that are not UTF-8 reach documents as lone surrogates (os.fsdecode)."""
    secret = TOKENS[2][1]
    tree = {"cwd": "/home/u/caf\udce9", "extra": {"name\udcff": ["a", "b\ud800c"], "pair": "\ud83d\ude00"},
            "clean": {"a": ["b"]}, "steps": [{"message": f"{secret} in caf\udce9"}], "n": 1}
    before = copy.deepcopy(tree)
    for redact in (False, True):
        out, counts = clean_tree(tree, redact=redact)
        assert out["cwd"] == "/home/u/caf\ufffd" and out["extra"]["name\ufffd"] == ["a", "b\ufffdc"]
        assert out["extra"]["pair"] == "\U0001f600" and out["clean"] is tree["clean"]
        message = (marker("openai", secret) if redact else secret) + " in caf\ufffd"
        assert out["steps"][0]["message"] == message and counts == ({"openai": 1} if redact else {})
        assert orjson.loads(orjson.dumps(out)) == out
    assert tree == before and clean_tree(tree, redact=False)[0] is not tree


@pytest.mark.parametrize("depth", [300, 5000])
def test_a_deep_tree_comes_out_and_keeps_no_secret(depth):
    """300 levels of a dict in a list can be walked, rebuilt and serialized whole; 5000 cannot
    be walked: the tree is cut as serializing would cut it."""
    deep = node = {}
    for _ in range(depth):
        node["a"] = [{}]
        node = node["a"][0]
    node["key"] = f"x {TOKENS[2][1]}"
    out, counts = clean_tree({"steps": [deep]})
    data = dumps(out)
    assert TOKENS[2][1].encode() not in data
    assert (b"nested too deeply" in data) == (depth == 5000)
    assert counts == ({} if depth == 5000 else {"openai": 1})


@pytest.mark.parametrize("text", [
    "-----BEGIN PRIVATE KEY-----\n" * 2000, "A" * 200_000, "sk-" * 50_000, "sk-proj-" * 20_000, "eyJ" * 50_000,
    "glpat-" * 30_000, "://a:" * 40_000, "password = " * 30_000, "api_key=" * 20_000, "token: " * 30_000,
    "mysql " + "-p" * 50_000, "%3a%2f%2f" * 20_000, "\x00" * 10_000, "key: " + "x" * 100_000,
    "machine a login b " * 10_000, "--a-b" * 30_000, "Authorization: Bearer " * 10_000,
], ids=lambda t: repr(t[:12]))
def test_runs_of_fake_prefixes_are_left_as_they_are(text):
    """Shapes that make patterns re-read text (a run of prefixes, each a candidate that fails):
    each is looked at and left alone. Quadratic work here would hang the test."""
    out, counts = redact_text(text)
    assert out is text and counts == {}


def test_a_discord_bot_token_is_caught_near_the_word_discord():
    """Its three parts have no prefix of their own: only near `discord` are they a token."""
    token = "MT" + rand(24, URLSAFE, 96) + "." + rand(6, URLSAFE, 97) + "." + rand(38, URLSAFE, 98)
    assert redact_text(f"Discord bot ready with {token}") == (
        f"Discord bot ready with {marker('discord', token)}", {"discord": 1})
    far = f"discord\n{'x ' * 600}{token}"
    assert redact_text(far) == (far, {})


def test_a_long_value_is_redacted_to_its_end():
    value, token = "Zq8Wx2Lm5Rt9" * 100, "sk-proj-" + rand(2000, URLSAFE, 95)
    assert redact_text(f"token={value} end") == (f"token={marker('assignment', value)} end", {"assignment": 1})
    assert redact_text(f"{token} end") == (f"{marker('openai', token)} end", {"openai": 1})


WORDS = [w for text in BENIGN for w in text.split()  # none that makes the next word a credential
         if not w.endswith((":", "=")) and "=" not in w and not w.startswith("--") and w not in ("-u", "-p", "login")
         ] + ["hello", "world", "the", "deploy", "—", "é", "中文"]
BEFORE = [" ", "\n", "\t", "\\n", "\\t", " (", "'", '"', ", "]
AFTER = [" ", "\n", "\t", "\\n", ")", "'", '"', ", ", ". "]
PLANTED = TOKENS + [(kind, text, secret) for kind, text, secret in SHAPES if "\n" not in text and kind != "telegram"]


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(WORDS), max_size=30), cut=st.integers(0, 30),
       planted=st.sampled_from(PLANTED), before=st.sampled_from(BEFORE), after=st.sampled_from(AFTER))
def test_a_secret_at_a_random_place_of_ordinary_text_is_caught_and_the_text_kept(words, cut, planted, before, after):
    kind, text, secret = planted if len(planted) == 3 else (planted[0], planted[1], planted[1])
    head, tail = " ".join(words[:cut]), " ".join(words[cut:])
    out, counts = redact_text(head + before + text + after + tail)
    assert out == head + before + text.replace(secret, marker(kind, secret)) + after + tail
    assert counts == {kind: 1}


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.sampled_from(WORDS), max_size=60), glue=st.sampled_from(BEFORE))
def test_random_ordinary_text_is_never_changed(words, glue):
    text = glue.join(words)
    assert redact_text(text) == (text, {})


def test_discovery_redacts_first_messages_and_models():
    """Titles are redacted once, at discovery: the index cache, listings, search output and
    title matching only ever see the redacted text."""
    from agents.base import Session
    from discovery import catalog

    secret = dict(TOKENS)["npm"]
    found = catalog.untrusted(Session("claude", "x", "/s", title=f"publish with\t{secret}", model=f"m {secret}"))
    with redact_module.markers_of("claude:x"):  # the session's, as in its document
        assert found.title == f"publish with\t{marker('npm', secret)}" and secret not in found.model
    plain = catalog.untrusted(Session("claude", "y", "/s", title="risk-assessment-for-production"))
    assert plain.title == "risk-assessment-for-production"


# Planted in every agent's store (below): one of each kind the old tests knew.
SECRETS = {
    "anthropic": "sk-ant-api03-Q2x9TfLm4RwZpB7nVc8KdYh3JsAe6GuXo1Ni5Pq0Wt-AbCdEfAA",
    "openai": "sk-proj-7hT2mQ9xWcLz4RbNp8VdKs3YfJg6AeU1",
    "google": "AIzaSyD4-xQ7mT2wR9pL5vK8nB3cF6hJ1gE0aZy",
    "github": "ghp_Xy7Qm2Tw9Rp4Lz8Vc3Nb6Kd1Hs5Jf0Ga2UeR",
    "gitlab": "glpat-x7Tq2Wm9Rp4Lz8Vc3Nb6",
    "slack": "xoxb-2741826392-9918273645-Qx7Tm2Wp9Rz4",
    "stripe": "sk_live_51Hx7Tq2Wm9Rp4Lz8Vc3Nb6Kd",
    "aws": "AKIAQ7XM2TW9RP4LZ8VC",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MTcwMDAwMDAwMH0.Qx7Tm2Wp9Rz4Lk8Vc3Nb6Kd1",
}
ASSIGNMENTS = {"assignment": "DEPLOY_TOKEN=Zq8Wx2Lm5Rt9", "url_password": "postgres://admin:Vx7Qm2Tz9@db.internal:5432/app"}
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAC3NzaC1lZDI1NTE5\n-----END OPENSSH PRIVATE KEY-----"
ORDINARY = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "request 550e8400-e29b-41d4-a716-446655440000",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "max_tokens=4096 and sort_key=lambda and PASSWORD=$DB_PASSWORD and API_KEY=<your key>",
    "see https://example.com:8080/path@v2 and the task-oriented design",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
]


def test_the_secrets_planted_in_stores_are_each_caught_with_their_context():
    text = json.dumps({"cmd": f"export {ASSIGNMENTS['assignment']}; psql {ASSIGNMENTS['url_password']}",
                       "file": PRIVATE_KEY, "keys": list(SECRETS.values())})
    out, counts = clean_tree(json.loads(text))
    assert out["cmd"] == (f"export DEPLOY_TOKEN={marker('assignment', 'Zq8Wx2Lm5Rt9')}; psql "
                          f"postgres://admin:{marker('url_password', 'Vx7Qm2Tz9')}@db.internal:5432/app")
    assert out["file"] == marker("private_key", PRIVATE_KEY)
    assert out["keys"] == [marker(kind, secret) for kind, secret in SECRETS.items()]
    assert counts == {"assignment": 1, "url_password": 1, "private_key": 1, **{k: 1 for k in SECRETS}}


def plant(root: str, anchor: str, payload: str) -> int:
    """Append `payload` after every mention of `anchor` in a copied store (text files and the
    text columns of SQLite databases). Returns how many files were changed."""
    changed = 0
    escaped = json.dumps(payload)[1:-1]  # valid inside JSON strings, plain files and JSON columns
    paths = [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names]
    for path in paths:
        if path.endswith(("-wal", "-shm")):
            continue
        with open(path, "rb") as handle:
            head = handle.read(16)
        if head.startswith(b"SQLite format 3"):
            changed += plant_sqlite(path, anchor, escaped)
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        if anchor in text:
            open(path, "w", encoding="utf-8").write(text.replace(anchor, f"{anchor} {escaped}"))
            changed += 1
    return changed


def plant_sqlite(path: str, anchor: str, escaped: str) -> int:
    connection = sqlite3.connect(path)
    tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    touched = 0
    for table in tables:
        for column in connection.execute(f'PRAGMA table_info("{table}")').fetchall():
            name = column[1]  # any column holding text, whatever its declared type (Crush: BLOB)
            touched += connection.execute(
                f'UPDATE "{table}" SET "{name}" = replace("{name}", ?, ?) '
                f'WHERE typeof("{name}") = \'text\' AND instr("{name}", ?)',
                (anchor, f"{anchor} {escaped}", anchor)).rowcount
    connection.commit()
    connection.close()
    return 1 if touched else 0


SURVIVORS = list(SECRETS.values()) + ["Zq8Wx2Lm5Rt9", "Vx7Qm2Tz9", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"]


def assert_no_secret(data: bytes, where: str) -> None:
    for secret in SURVIVORS:
        assert secret.encode() not in data, f"{secret} survived in {where}"


@pytest.mark.parametrize("home", agent_homes(), ids=lambda h: h.agent)
def test_no_planted_secret_survives_in_any_agents_output(home, tmp_path):
    """Secrets planted next to text every agent's documents show (its `anchor`): none survives
    export, show or search --content, ordinary text around them is intact, and --no-redact
    gives them back (proof that they were planted where the documents read)."""
    root = tmp_path / "store"
    root.mkdir()
    env = home.build(root)
    payload = " ".join(list(SECRETS.values()) + list(ASSIGNMENTS.values()) + [PRIVATE_KEY] + ORDINARY)
    assert plant(str(root), home.anchor, payload), f"{home.anchor!r} is nowhere in the store"
    cwd = env.get("PWD", str(tmp_path))
    out = tmp_path / "out"
    result = cli("export", "--all", "--out", str(out), env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    documents = [json.loads(p.read_bytes()) for p in out.glob("*.atif.json")]
    raw = b"".join(p.read_bytes() for p in out.glob("*.atif.json"))
    assert documents and home.anchor.encode() in raw
    assert_no_secret(raw, "export")
    assert_no_secret((out / "INDEX.md").read_bytes(), "the export's INDEX.md")
    for text in ORDINARY:
        assert json.dumps(text)[1:-1].encode() in raw
    redacted = [d for d in documents if d["extra"].get("redactions")]
    assert redacted and all(set(d["extra"]["redactions"]) >= {"openai", "github"} for d in redacted)
    for doc in redacted:
        assert_valid(doc)
        shown = run_main(env, ["show", doc["extra"]["short_id"]], cwd=cwd)
        assert shown.returncode == 0 and b"REDACTED" in shown.stdout
        assert_no_secret(shown.stdout, "show")
    for mode in ([], ["--json"]):
        searched = run_main(env, ["search", "--content", "--limit", "0", *mode, home.anchor], cwd=cwd)
        assert searched.returncode == 0 and b"REDACTED" in searched.stdout, searched.stderr
        assert_no_secret(searched.stdout + searched.stderr, f"search --content {' '.join(mode)}")
    unredacted = run_main(env, ["export", "--all", "--no-redact", "--out", str(tmp_path / "raw")], cwd=cwd)
    assert unredacted.returncode == 0
    assert SECRETS["openai"].encode() in b"".join(p.read_bytes() for p in (tmp_path / "raw").glob("*.atif.json"))


def test_no_planted_secret_survives_in_the_mount(tmp_path):
    """The mount serves the same redacted bytes: planted secrets are found by no grep over it."""
    from test_memory import FUSE_PROBLEM, client, make_store, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, proj, _ = make_store(tmp_path)
    payload = " ".join(list(SECRETS.values()) + list(ASSIGNMENTS.values()) + [PRIVATE_KEY] + ORDINARY)
    assert plant(env["HOME"], "note.txt", payload)
    point = os.path.join(proj, "memory")
    try:
        mount(env, proj)
        files = [os.path.join(point, n) for n in client("ls", point).stdout.split() if n.endswith(".atif.json")]
        assert len(files) >= 6
        served = b"".join(client("cat", f).stdout.encode() for f in files)
        assert served.count(b"REDACTED:openai") >= len(files) - 1
        assert_no_secret(served, "the mount")
        for secret in SURVIVORS:
            assert client("grep", "-R", "-l", "-F", secret, point).stdout == "", secret  # -R: the documents too
    finally:
        take_down(point)


def test_names_that_are_not_utf8_come_out_as_replacement_characters(tmp_path):
    """A lone surrogate in a session (a file name os.fsdecode could not decode, a `\\udcff`
    escape) comes out as U+FFFD in `show`, redacted or not; orjson could not serialize it."""
    home = by_agent("claude")
    root = tmp_path / "store"
    root.mkdir()
    env = home.build(root)
    assert plant(str(root), home.anchor, "caf\udce9.txt")
    cwd = env.get("PWD", str(tmp_path))
    ids = [session.short_id for session in catalog.discover(env).sessions]
    shown = [run_main(env, ["show", short_id, *flag], cwd=cwd).stdout for short_id in ids for flag in ([], ["--no-redact"])]
    assert any("caf\ufffd.txt".encode() in out for out in shown)
    for out in shown:
        json.loads(out)
        assert b"caf?.txt" not in out


@pytest.mark.parametrize("before", [150, 185, 195, 1590])
def test_a_first_message_cut_for_a_listing_shows_no_part_of_a_secret(before):
    """The listing's cut came before redaction: `ghp_N1fHW93R…` (too short to be recognized)
    was printed for a token that straddled it."""
    from agents.base import one_line
    from discovery.catalog import listing_title

    secret = dict(TOKENS)["github"]
    line = listing_title(one_line("x" * before + " " + secret + " and more words after it" * 80))
    assert secret[:8] not in line and line.endswith("…") and len(line) <= 200


def test_no_rule_takes_a_uuid_alone_which_redact_text_passes_unsearched():
    """redact_text's fast path for session ids holds: the full search finds nothing in a UUID
    alone, in either case, whatever its digits."""
    import uuid

    rng = random.Random(7)
    for _ in range(2000):
        text = str(uuid.UUID(int=rng.getrandbits(128)))
        for shown in (text, text.upper()):
            assert redact_module.found_spans(shown.encode()) == []
            assert redact_text(shown) == (shown, {})
    assert redact_text("token=" + text)[1]  # after a name, it is still a secret


def test_a_key_header_followed_by_a_word_is_no_key_and_a_cut_key_still_is():
    """Found by the property test above: a BEGIN line quoted in code, followed by a file name's
    first word, kept whole; a key cut after a few characters of its first line still goes."""
    code = "line.startswith('-----BEGIN PRIVATE KEY----- risk-assessment-for-production-systems.md"
    assert redact_text(code) == (code, {})
    assert redact_text("-----BEGIN PRIVATE KEY-----\nMIIEvQIBAD")[1] == {"private_key": 1}


def oracle_texts(seed: int) -> list[str]:
    """Lines and whole payloads of the oracle's generated corpus (every kind of secret in every
    presentation), and benign lines: what a listing's texts may be."""
    texts = []
    for index in range(len(PRESENTATIONS)):
        text, _ = payload(index, seed)
        texts += [text] + text.split("\n")
    return texts + BENIGN_TITLES


BENIGN_TITLES = ["fix the flaky test in tests/test_sqlite_ro.py", "risk-assessment-for-production",
                 "SCENARIO shard scheduler claude-1: run a shell command that writes hello into note.txt",
                 "claude-opus-4-5-20251101", "0195f4a3-8c1e-7d2b-9f60-3a4b5c6d7e8f", "", "why is the cache keyed by inode?"]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=80))
def test_texts_found_clean_together_are_clean_alone(seed, picks):
    """`clean_among` reads many texts in one search: each text it calls clean is one
    `redact_text` returns unchanged, and no text holding a secret is among them, whatever its
    neighbours (the generated corpus: every kind in every presentation)."""
    texts = oracle_texts(seed)
    batch = [texts[pick % len(texts)] for pick in picks]
    clean = redact_module.clean_among(batch)
    for text in set(batch):
        alone = redact_text(text)
        assert (text in clean) <= (alone == (text, {})), text
    assert {t for t in batch if redact_text(t) == (t, {})} >= clean


def test_a_listing_read_in_a_batch_is_the_listing_read_alone(tmp_path):
    """Discovery finds its batch's clean titles in one search: each session's listing texts
    are those it gets redacted alone, a secret's title among clean ones included, and one
    quoting another session's secret (found alone: not redacted)."""
    from agents.base import Session

    secret = dict(TOKENS)["npm"]
    titles = BENIGN_TITLES + [f"publish with {secret}", f"and {secret[4:]} alone", "line 1\n     2\tAKIA" + "Q" * 16]

    def sessions():
        return [Session("claude", f"id-{n}", "/s", title=t, model="m") for n, t in enumerate(titles)]

    clean = redact_module.clean_among([t for s in sessions() for t in catalog.listing_texts(s)])
    batched = [catalog.untrusted(s, clean).to_cache() for s in sessions()]
    catalog._texts.clear()
    alone = [catalog.untrusted(s).to_cache() for s in sessions()]
    assert batched == alone
    assert secret not in str(batched) and len(clean) >= len(BENIGN_TITLES) - 1


# Texts ending where a rule's match would begin or go on: a neighbour's opener must not swallow
# the start of the next text's secret (a match running across the NUL between them).
OPENERS = ["password: ", "token=", "Authorization: Bearer ", "mysql -u root -p", "https://user:",
           "export AWS_SECRET_ACCESS_KEY=", '"api_key": "', "--password ", "discord ",
           "-----BEGIN RSA PRIVATE KEY-----\n", "     1\t", "\x1b[32m", "KEY_", "secret: 'abc", "x:",
           "\\", "\\n", "\\u001b[", "ghp_", "sk-", "AKIA", "a" * 300]


def test_no_neighbour_hides_a_secret():
    """Every text of the generated corpus that holds a secret stays out of `clean_among`
    beside each opener, before or after it."""
    texts = [t for t in dict.fromkeys(oracle_texts(1)) if redact_text(t)[1]]
    assert len(texts) > 100
    hidden = [(opener, text[:60]) for opener in OPENERS for text in texts
              if text in redact_module.clean_among([opener, text]) | redact_module.clean_among([text, opener])]
    assert hidden == []
