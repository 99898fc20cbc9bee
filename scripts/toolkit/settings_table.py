"""How a setting's default is written in the README's settings table and in .env.example."""


def shown_default(value: object) -> str:
    """A default as the table and .env.example write it: `unset`, `true`, `5`, the key itself."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(getattr(value, "get_secret_value", lambda: value)())
