"""Practicum settings. Everything that varies by deployment comes from environment variables (lab/env.py).

Embedded default (nothing set): SQLite, in-process channel layer, Celery on an in-memory broker with a worker
inside the web process. With DATABASE_URL and REDIS_URL: PostgreSQL, Redis channel layer and Celery broker,
separate `celery worker` processes (docker-compose.yml).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from lab.env import env_bool, env_endpoints, env_int, env_networks, env_str, env_url
from lab.secret_key import secret_key_resolve

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PRACTICUM_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", default=False)
SECRET_KEY = secret_key_resolve(configured=env_str("DJANGO_SECRET_KEY", "").strip(), var_dir=VAR_DIR)
ALLOWED_HOSTS = [h for h in env_str("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# --- https -------------------------------------------------------------------------------------------------
# PRACTICUM_HTTPS=1 when users reach the console over https (directly or through a TLS proxy): cookies are sent over
# https only, browsers are told to use https for the next PRACTICUM_HSTS_SECONDS, plain http is redirected.
# Behind a proxy that terminates TLS, also set PRACTICUM_TLS_PROXY=1 so that Django trusts the proxy's
# `X-Forwarded-Proto: https`; only then, as a client talking to Django directly could send that header itself.
PRACTICUM_HTTPS = env_bool("PRACTICUM_HTTPS", default=False)
PRACTICUM_TLS_PROXY = env_bool("PRACTICUM_TLS_PROXY", default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = PRACTICUM_HTTPS
SECURE_SSL_REDIRECT = PRACTICUM_HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # health checks probe plain http inside the deployment
SECURE_HSTS_SECONDS = env_int("PRACTICUM_HSTS_SECONDS", 31_536_000, minimum=0) if PRACTICUM_HTTPS else 0
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PRACTICUM_TLS_PROXY else None
CSRF_COOKIE_HTTPONLY = True  # pages send the token from the template (hx-headers); no script reads the cookie

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from here, never from a CDN
    "django_htmx",
    "channels",
    "lab.projects",
    "lab.trajectories",
    "lab.live",
    "lab.play",
    "lab.rollouts",
    "lab.diagnoses",
    "lab.runs",
    "lab.improve",
    "lab.screenshots",
    "lab.federation",
    "lab.console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "lab.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "lab.edge.BadInputMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "lab.urls"
WSGI_APPLICATION = "lab.wsgi.application"
ASGI_APPLICATION = "lab.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# --- database ----------------------------------------------------------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", schemes=("postgres", "postgresql", "sqlite"))
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0))}
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": env_str("SQLITE_PATH", str(VAR_DIR / "db.sqlite3"))}}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the embedded worker thread write while the web thread reads. IMMEDIATE transactions take the
    # write lock at BEGIN, so a second writer waits out `timeout` instead of failing at once with "database is
    # locked" when its read lock cannot be upgraded. Applied to sqlite:// DATABASE_URLs too.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
    }
    # Tests get a file too, not Django's shared-cache in-memory database: there another connection's lock fails a
    # query at once ("database table is locked", which no timeout waits out), and the embedded worker's threads
    # have connections of their own.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- redis: channel layer and Celery broker ----------------------------------------------------------------
REDIS_URL = env_url("REDIS_URL", schemes=("redis", "rediss"))
if REDIS_URL:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Embedded mode runs the Celery worker inside the web process (manage.py serve), on an in-memory broker.
CELERY_EMBEDDED = not REDIS_URL
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for a retry (rollout crash safety)
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
# Redis hands a message back to the queue when its task has run longer than the visibility timeout: the way a task
# of a lost worker comes back, and, for a longer task, a duplicate that lab.exclusive holds back while the first
# worker lives, looking again every PRACTICUM_DUPLICATE_RECHECK_S.
PRACTICUM_VISIBILITY_TIMEOUT_S = env_int("PRACTICUM_VISIBILITY_TIMEOUT_S", 3600, minimum=1)
PRACTICUM_DUPLICATE_RECHECK_S = env_int("PRACTICUM_DUPLICATE_RECHECK_S", 300, minimum=1)
# Fairness across projects (lab/claims.py): at most this many rollouts and imports of one project run at once, across
# all workers (a project's `max_concurrent_jobs` overrides it); a task over the limit goes back to the queue for
# about PRACTICUM_FAIR_RECHECK_S (longer when its project has a deep backlog), so other projects' tasks get the workers.
PRACTICUM_PROJECT_CONCURRENCY = env_int("PRACTICUM_PROJECT_CONCURRENCY", 8, minimum=1, maximum=1024)
PRACTICUM_FAIR_RECHECK_S = env_int("PRACTICUM_FAIR_RECHECK_S", 2, minimum=1)
# Live streams re-check the watcher's access before every event and this often while the stream is quiet.
PRACTICUM_LIVE_ACCESS_CHECK_S = env_int("PRACTICUM_LIVE_ACCESS_CHECK_S", 30, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.05} if CELERY_EMBEDDED else {"visibility_timeout": PRACTICUM_VISIBILITY_TIMEOUT_S}

# --- auth, i18n, static ------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
# Failed sign-ins and API-key attempts one client address may make per username / key prefix in a minute
# (lab.projects.throttle); successful ones are never counted.
PRACTICUM_AUTH_FAILURES_PER_MINUTE = env_int("PRACTICUM_AUTH_FAILURES_PER_MINUTE", 10, minimum=1)
# Failed sign-ins on one username from all addresses together, per minute, before it is refused from everywhere.
PRACTICUM_AUTH_ACCOUNT_FAILURES_PER_MINUTE = env_int("PRACTICUM_AUTH_ACCOUNT_FAILURES_PER_MINUTE", 50, minimum=1)
# Reverse proxies in front of the server that append to X-Forwarded-For (0: the header is never read, as any client can
# write it). With N, the client's address for throttling is the one the outermost of the N proxies saw.
PRACTICUM_TRUSTED_PROXIES = env_int("PRACTICUM_TRUSTED_PROXIES", 0, minimum=0, maximum=10)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Shared by every web process in the Redis mode, so a client cannot spread its guesses over them.
    "auth_failures": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "practicum"}
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "auth-failures"},
}
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True  # serve straight from static/ without collectstatic in the embedded mode

# --- API ---------------------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "lab.projects.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "lab.api_params.KnownQueryParameters"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "lab.api_errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "lab.api_parsers.StrictJSONParser",
        "lab.api_parsers.StrictFormParser",
        "lab.api_parsers.StrictMultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": None,
    "URL_FORMAT_OVERRIDE": None,  # `?format=` selects an upload/export format here, not a renderer
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Practicum API",
    "DESCRIPTION": "Trajectories, tasks, agents, diagnoses, evaluations and training runs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Uploads: a request body over this many bytes answers 413 before it is parsed.
PRACTICUM_MAX_UPLOAD_BYTES = env_int("PRACTICUM_MAX_UPLOAD_BYTES", 64 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = PRACTICUM_MAX_UPLOAD_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
# One budget of bytes that decoding an upload may produce: unzipped members at every nesting level and inspect
# `attachment://` expansions together. Past it the upload answers 413 before the expansion is built.
PRACTICUM_MAX_EXPANDED_BYTES = env_int("PRACTICUM_MAX_EXPANDED_BYTES", 4 * PRACTICUM_MAX_UPLOAD_BYTES, minimum=1024)
# The same budget relative to the upload's size: decoding may produce at most this many times the bytes uploaded
# (0 turns it off), never less than the floor, so a 300 KB bomb is refused after 16 MB of work, not 256 MB.
PRACTICUM_MAX_EXPANSION_RATIO = env_int("PRACTICUM_MAX_EXPANSION_RATIO", 50, minimum=0)
PRACTICUM_EXPANSION_FLOOR_BYTES = env_int("PRACTICUM_EXPANSION_FLOOR_BYTES", 16 * 1024 * 1024, minimum=1024)
# Screenshots (lab.screenshots): one PNG at most this big, and at most this many bytes of them per project;
# past the budget a step is recorded without its screenshot (and says why), never refused.
PRACTICUM_MAX_SCREENSHOT_BYTES = env_int("PRACTICUM_MAX_SCREENSHOT_BYTES", min(8 * 1024 * 1024, PRACTICUM_MAX_UPLOAD_BYTES), minimum=1024)
PRACTICUM_SCREENSHOT_BUDGET_BYTES = env_int("PRACTICUM_SCREENSHOT_BUDGET_BYTES", 2 * 1024**3, minimum=1024)
# Seeds in one evaluation (console forms, API, `manage.py evaluate`); a longer list or range is refused unexpanded.
PRACTICUM_MAX_SEEDS = env_int("PRACTICUM_MAX_SEEDS", 1000, minimum=1)
# A play session nobody has touched for this long ends as abandoned (unscored, kept apart from success rates).
PRACTICUM_PLAY_IDLE_MINUTES = env_int("PRACTICUM_PLAY_IDLE_MINUTES", 120, minimum=1)
# The fidelity report (lab/console/fidelity.py) reads at most this many episodes per set, so it computes inline.
PRACTICUM_FIDELITY_MAX_EPISODES = env_int("PRACTICUM_FIDELITY_MAX_EPISODES", 200, minimum=1)
# An external run's metric reports (lab/runs/external.py): values per report and bytes per request (413 past
# either), and values per run per minute (429 with Retry-After past it), so no reporter holds the database.
PRACTICUM_METRIC_ROWS_PER_REPORT = env_int("PRACTICUM_METRIC_ROWS_PER_REPORT", 5000, minimum=1)
PRACTICUM_METRIC_REPORT_BYTES = env_int("PRACTICUM_METRIC_REPORT_BYTES", 1024 * 1024, minimum=1024)
PRACTICUM_METRIC_ROWS_PER_MINUTE = env_int("PRACTICUM_METRIC_ROWS_PER_MINUTE", 20_000, minimum=1)
# Rollout jobs one comparison request may create (agents x tasks x seeds); above it the launch is refused uncreated.
PRACTICUM_MAX_COMPARISON_JOBS = env_int("PRACTICUM_MAX_COMPARISON_JOBS", 2000, minimum=1)
PRACTICUM_MAX_RECORDS_PER_UPLOAD = env_int("PRACTICUM_MAX_RECORDS_PER_UPLOAD", 10_000, minimum=1)
PRACTICUM_MAX_STEPS_PER_EPISODE = env_int("PRACTICUM_MAX_STEPS_PER_EPISODE", 100_000, minimum=1)
# Extra secret patterns (regular expressions, separated by newlines) redacted at ingest beside the defaults.
PRACTICUM_REDACTION_PATTERNS = [p for p in env_str("PRACTICUM_REDACTION_PATTERNS", "").split("\n") if p.strip()]
PRACTICUM_UPLOAD_DIR = VAR_DIR / "uploads"
PRACTICUM_CHECKPOINT_DIR = Path(env_str("PRACTICUM_CHECKPOINT_DIR", str(VAR_DIR / "checkpoints")))
# Checkpoints shared between machines (lab/runs/storage.py): empty keeps them in the folder above only; s3://bucket/prefix
# mirrors every checkpoint to an S3-compatible store (the `s3` extra), at PRACTICUM_S3_ENDPOINT_URL when not AWS itself.
PRACTICUM_CHECKPOINT_STORE = env_str("PRACTICUM_CHECKPOINT_STORE", "").strip()
if PRACTICUM_CHECKPOINT_STORE and not (PRACTICUM_CHECKPOINT_STORE.startswith("s3://") and len(PRACTICUM_CHECKPOINT_STORE) > 5):
    raise ImproperlyConfigured(
        f"PRACTICUM_CHECKPOINT_STORE={PRACTICUM_CHECKPOINT_STORE!r} must be s3://bucket/prefix, or empty for the local folder"
    )
PRACTICUM_S3_ENDPOINT_URL = env_url("PRACTICUM_S3_ENDPOINT_URL", schemes=("http", "https"))
# The operator's read-only store of base models: base models, agent models and teachers resolve inside it (or
# inside the project's own checkpoints); a bare name such as "qwen3-0.6b" means <store>/qwen3-0.6b.
PRACTICUM_MODEL_STORE = Path(env_str("PRACTICUM_MODEL_STORE", str(VAR_DIR / "models")))
# Nothing the lab loads comes from the hub at run time; an operator who wants downloads sets HF_HUB_OFFLINE=0.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Outbound calls. `openai` agents call an endpoint the operator names here (name -> base URL -> the variable
# holding its key); the key is read at call time, never stored in agents or episodes. OPENAI_API_KEY and
# VLLM_BASE_URL, when set, define the endpoints `openai` and `vllm` unless PRACTICUM_ENDPOINTS names them.
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
VLLM_BASE_URL = env_url("VLLM_BASE_URL", schemes=("http", "https"))
_IMPLIED_ENDPOINTS = {
    **(
        {
            "openai": {
                "base_url": env_url("OPENAI_BASE_URL", schemes=("http", "https")) or "https://api.openai.com/v1",
                "key_env": "OPENAI_API_KEY",
            }
        }
        if OPENAI_API_KEY
        else {}
    ),
    **({"vllm": {"base_url": VLLM_BASE_URL}} if VLLM_BASE_URL else {}),
}
PRACTICUM_ENDPOINTS = env_endpoints("PRACTICUM_ENDPOINTS", defaults=_IMPLIED_ENDPOINTS)
# Free URLs (not a declared name) for `openai` agents: off by default; never sent a key; public addresses only,
# unless inside one of PRACTICUM_ALLOWED_PRIVATE_NETWORKS (comma-separated CIDRs).
PRACTICUM_ALLOW_FREE_ENDPOINTS = env_bool("PRACTICUM_ALLOW_FREE_ENDPOINTS", False)
PRACTICUM_ALLOWED_PRIVATE_NETWORKS = env_networks("PRACTICUM_ALLOWED_PRIVATE_NETWORKS")
# Federation peers (other installations a project may exchange artifacts with), declared like the endpoints above:
# a JSON object {name: {"base_url": URL, "key_env": VAR}}. A project's Peer names one of these, never a free URL.
PRACTICUM_FEDERATION_PEERS = env_endpoints("PRACTICUM_FEDERATION_PEERS", defaults={})
# Between installations (lab/federation/exchange.py): this installation's name, as its peers declare it in their
# PRACTICUM_FEDERATION_PEERS (default: the host name); the byte budget of one push, sent or received (base64
# inflates an artifact by a third); the timeout of a push; and how far a signed request's clock may be off.
PRACTICUM_FEDERATION_NAME = env_str("PRACTICUM_FEDERATION_NAME", re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:64] or "practicum")
if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", PRACTICUM_FEDERATION_NAME):
    raise ImproperlyConfigured(
        f"PRACTICUM_FEDERATION_NAME={PRACTICUM_FEDERATION_NAME!r}: a name is letters, digits, '_', '.' or '-' (at most 64)"
    )
PRACTICUM_FEDERATION_MAX_BYTES = env_int(
    "PRACTICUM_FEDERATION_MAX_BYTES", min(32 * 1024 * 1024, PRACTICUM_MAX_UPLOAD_BYTES), minimum=1024, maximum=PRACTICUM_MAX_UPLOAD_BYTES
)
PRACTICUM_FEDERATION_TIMEOUT_S = env_int("PRACTICUM_FEDERATION_TIMEOUT_S", 30, minimum=1, maximum=600)
PRACTICUM_FEDERATION_CLOCK_SKEW_S = env_int("PRACTICUM_FEDERATION_CLOCK_SKEW_S", 300, minimum=5, maximum=3600)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"}},
}
