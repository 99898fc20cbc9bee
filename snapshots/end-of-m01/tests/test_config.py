"""Settings: defaults, the environment over .env, and one clear line for every bad value."""

import re
from pathlib import Path

import pytest

from scripts.toolkit.settings_table import shown_default
from ticket_api.config import Settings, load_settings
from ticket_api.errors import StartupError

ALL_VARIABLES = [name.upper() for name in Settings.model_fields]
README = Path(__file__).resolve().parent.parent / "README.md"
TABLE_HEADER = "| Variable | Default | Meaning |"


def readme_defaults() -> dict[str, str]:
    """The README's settings table (the rows after TABLE_HEADER) as {VARIABLE: default as written}."""
    rows = README.read_text().split(TABLE_HEADER, 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    cells = [re.fullmatch(r"\| `([A-Z_]+)` \| (.*?) \| .* \|", row) for row in rows]
    return {found[1]: found[2].strip("`") for found in cells if found}


pytestmark = pytest.mark.usefixtures("clean_environment")


def refusal(monkeypatch, variable: str, value: str) -> str:
    """The message load_settings() refuses `variable=value` with: one line, naming the variable first."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(StartupError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"invalid setting {variable}=")
    return message


def test_defaults_match_the_readme():
    settings = load_settings()
    assert readme_defaults() == {name: shown_default(getattr(settings, name.lower())) for name in ALL_VARIABLES}


def test_the_environment_is_read(monkeypatch):
    monkeypatch.setenv("DB_POOL", "false")
    monkeypatch.setenv("THREAD_LIMIT", "200")
    settings = load_settings()
    assert settings.db_pool is False
    assert settings.thread_limit == 200


def test_dotenv_is_read(tmp_path):
    (tmp_path / ".env").write_text("DB_POOL_MAX_SIZE=3\nLOG_LEVEL=debug\n")
    settings = load_settings()
    assert settings.db_pool_max_size == 3
    assert settings.log_level == "DEBUG"


def test_the_environment_wins_over_dotenv(monkeypatch, tmp_path):
    (tmp_path / ".env").write_text("DB_POOL_MAX_SIZE=3\n")
    monkeypatch.setenv("DB_POOL_MAX_SIZE", "7")
    assert load_settings().db_pool_max_size == 7


def test_unknown_keys_in_dotenv_are_ignored(tmp_path):
    (tmp_path / ".env").write_text("SOMETHING_FROM_A_LATER_MODULE=1\nDB_POOL_MAX_SIZE=4\n")
    assert load_settings().db_pool_max_size == 4


def test_trailing_slash_of_the_provider_url_is_dropped(monkeypatch):
    monkeypatch.setenv("PROVIDER_URL", "http://127.0.0.1:9000/v1/")
    assert load_settings().provider_url == "http://127.0.0.1:9000/v1"


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("DB_POOL", "maybe", "true or false"),
        ("DB_POOL_MAX_SIZE", "0", "greater than or equal to 1"),
        ("DB_POOL_TIMEOUT_S", "-1", "greater than 0"),
        ("DATABASE_URL", "mysql://root@localhost/db", "postgresql://"),
        ("PROVIDER_URL", "ftp://example.com", "http://"),
        ("PROVIDER_TIMEOUT_S", "soon", "valid number"),
        ("THREAD_LIMIT", "0", "greater than or equal to 1"),
        ("LOG_LEVEL", "LOUD", "DEBUG"),
        ("LOOP_WATCHDOG_MS", "-5", "greater than or equal to 0"),
    ],
)
def test_a_bad_value_gives_one_line_naming_variable_value_and_what_is_allowed(monkeypatch, variable, value, allowed):
    message = refusal(monkeypatch, variable, value)
    assert repr(value) in message
    assert allowed in message


def test_the_api_key_never_shows(monkeypatch):
    monkeypatch.setenv("PROVIDER_API_KEY", "sk-very-secret")
    settings = load_settings()
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(settings.model_dump())
    assert settings.provider_api_key.get_secret_value() == "sk-very-secret"
