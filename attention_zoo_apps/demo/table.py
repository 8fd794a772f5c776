"""The demo's summary table: plain text, one row per application."""

HEADERS = ("application", "metric", "export", "ms/example", "example output")
MAX_LAST = 72  # a longer last cell (a long caption) is cut with "..."


def format_table(rows, headers=HEADERS):
    """Aligned columns under a header line and a rule; cells are put on
    one line and the last column's cut to `MAX_LAST` characters.

    Args:
        rows: list of sequences of str, one cell per header.
        headers: the column names.

    Returns:
        The table as one str, lines joined by newlines.
    """
    cells = [list(headers)]
    for row in rows:
        row = [" ".join(str(cell).split()) for cell in row]
        cells.append(row[:-1] + [_cut(row[-1])])
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [_line(row, widths) for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _cut(text):
    return text if len(text) <= MAX_LAST else text[: MAX_LAST - 3] + "..."


def _line(row, widths):
    cells = (cell.ljust(width) for cell, width in zip(row, widths))
    return "  ".join(cells).rstrip()
