"""Figures as text: plain-text tables and milliseconds written for people."""


def format_table(headers: list[str], rows: list[list]) -> str:
    """Columns padded to their widest cell: the first one left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: list) -> str:
        padded = [
            str(cell).ljust(w) if i == 0 else str(cell).rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=False))
        ]
        return "  ".join(padded).rstrip()

    return "\n".join(line(cells) for cells in [headers, *rows])


def fmt_ms(value: float | None) -> str:
    """Milliseconds for a table: `12.3`, `1,955` past a thousand, `-` when there is no figure."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def readable_ms(ms: float | None) -> str:
    """`8.74 s` from a thousand milliseconds on, else `3.4 ms`; `-` when there is no figure."""
    if ms is None:
        return "-"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"
