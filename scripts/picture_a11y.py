"""What axe cannot see inside a picture (issue 30 §2): the contrast of every text run of a Graphviz
SVG against the fill beneath it, and colour-blindness simulations of a PNG.

    python -m scripts.picture_a11y contrast picture.svg      # the worst text runs, with their ratio
    python -m scripts.picture_a11y simulate picture.png      # picture.protanopia.png, ... beside it

Contrast is WCAG 2.1's (relative luminance of sRGB). The fill beneath a text run is the last
filled shape drawn before it whose box holds the text's anchor (Graphviz draws a node's fills,
then its text), white (the page) when there is none."""
from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

NAMED = {"white": "#ffffff", "black": "#000000", "none": None, "transparent": None}
SVG = "{http://www.w3.org/2000/svg}"


def hex_rgb(colour: str) -> tuple[float, float, float]:
    c = colour.lstrip("#")
    if len(c) == 3:
        c = "".join(ch * 2 for ch in c)
    return tuple(int(c[i:i + 2], 16) / 255 for i in (0, 2, 4))


def luminance(colour: str) -> float:
    def lin(v):
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(v) for v in hex_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: str, bg: str) -> float:
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def _colour(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    if value in NAMED:
        return NAMED[value]
    return value if re.fullmatch(r"#[0-9a-f]{3}|#[0-9a-f]{6}", value) else None


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def _box(el) -> tuple[float, float, float, float] | None:
    tag = el.tag.replace(SVG, "")
    if tag in ("polygon", "polyline"):
        v = _numbers(el.get("points", ""))
    elif tag == "path":
        v = _numbers(el.get("d", ""))
    elif tag == "ellipse":
        cx, cy, rx, ry = (float(el.get(k, 0)) for k in ("cx", "cy", "rx", "ry"))
        return cx - rx, cy - ry, cx + rx, cy + ry
    elif tag == "rect":
        x, y, w, h = (float(el.get(k, 0)) for k in ("x", "y", "width", "height"))
        return x, y, x + w, y + h
    else:
        return None
    xs, ys = v[0::2], v[1::2]
    return (min(xs), min(ys), max(xs), max(ys)) if xs and ys else None


def _walk(el, in_edge: bool):
    """Every element in document order, with whether it lies inside an edge's group."""
    in_edge = in_edge or "edge" in (el.get("class") or "").split()
    yield el, in_edge
    for child in el:
        yield from _walk(child, in_edge)


def text_contrasts(svg: str) -> list[tuple[float, str, str, str]]:
    """[(ratio, text, its colour, the fill beneath)] of every <text> of a Graphviz SVG."""
    root = ET.fromstring(svg[svg.find("<svg"):])
    fills: list = []
    out = []
    for el, in_edge in _walk(root, False):
        tag = el.tag.replace(SVG, "")
        if tag == "text":
            fg = _colour(el.get("fill")) or "#000000"
            size = float(el.get("font-size", 10))
            x, y = float(el.get("x", 0)), float(el.get("y", 0)) - size * 0.3
            bg = next((c for box, c in reversed(fills)
                       if box[0] - 0.5 <= x <= box[2] + 0.5 and box[1] - 0.5 <= y <= box[3] + 0.5), "#ffffff")
            words = "".join(el.itertext()).strip()
            if words:
                out.append((contrast(fg, bg), words, fg, bg))
        else:
            fill = _colour(el.get("fill"))
            box = _box(el) if fill and not in_edge else None     # an arrowhead is no text's background
            if box is not None and (box[2] - box[0]) > 1 and (box[3] - box[1]) > 1:
                fills.append((box, fill))
    return out


# Colour-vision simulations: Machado, Oliveira & Fernandes (2009) at severity 1.0 for protanopia
# and deuteranopia (applied to linear RGB), and greyscale by relative luminance.
MACHADO = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
}


def simulate(rgb, kind: str):
    """An (h, w, 3) uint8 array as seen with `kind`: protanopia, deuteranopia or greyscale."""
    import numpy as np
    x = rgb.astype(np.float64) / 255
    lin = np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)
    if kind == "greyscale":
        y = lin @ np.array([0.2126, 0.7152, 0.0722])
        out = np.repeat(y[..., None], 3, axis=2)
    else:
        out = np.clip(lin @ np.array(MACHADO[kind]).T, 0, 1)
    srgb = np.where(out <= 0.0031308, out * 12.92, 1.055 * out ** (1 / 2.4) - 0.055)
    return (np.clip(srgb, 0, 1) * 255 + 0.5).astype(np.uint8)


def simulate_file(path: str) -> list[str]:
    import numpy as np
    from PIL import Image
    rgb = np.asarray(Image.open(path).convert("RGB"))
    written = []
    for kind in ("protanopia", "deuteranopia", "greyscale"):
        out = path.rsplit(".", 1)[0] + f".{kind}.png"
        Image.fromarray(simulate(rgb, kind)).save(out)
        written.append(out)
    return written


def main(argv) -> int:
    if len(argv) != 2 or argv[0] not in ("contrast", "simulate"):
        print(__doc__)
        return 2
    if argv[0] == "simulate":
        print("\n".join(simulate_file(argv[1])))
        return 0
    runs = sorted(text_contrasts(open(argv[1], encoding="utf-8").read()))
    for ratio, words, fg, bg in runs[:20]:
        print(f"{ratio:5.2f}:1  {fg} on {bg}  {words}")
    return 0 if not runs or runs[0][0] >= 4.5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
