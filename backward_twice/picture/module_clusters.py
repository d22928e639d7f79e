"""Module grouping: boxes in one cluster per module call (backward_twice.modules decides the clusters,
their labels and the boxes that stand for whole calls; this pass puts them in the scene)."""
from __future__ import annotations

from .marks import Grouping
from .scene import Box, Cluster, Edge, Scene


def group(scene: Scene, grouping: Grouping) -> None:
    number = {key: f"m{i}" for i, key in enumerate(grouping.clusters)}
    for key, (parent, label) in grouping.clusters.items():
        scene.clusters[number[key]] = Cluster(number[key], number.get(parent), label)
    for box in scene.boxes.values():
        key = grouping.of.get(box.id, grouping.of.get(box.near) if box.near else None)
        box.cluster = number.get(key)
    for bid, table in grouping.boxes.items():
        scene.add(Box(bid, table, "call", cluster=number.get(grouping.of.get(bid))))
    scene.edges.extend(Edge(a, b) for a, b in grouping.box_edges)


def order_only(scene: Scene, grouping: Grouping) -> None:
    """Invisible edges that only order the layout (an opened call's parameters below the boxes
    that feed it; branches one below the other). A node folded into another box (a chain) orders
    that box; an edge inside one box, or to a node not drawn, is left out (Graphviz would draw such
    a node as a bare label)."""
    seen = set()
    for a, b in grouping.invisible:
        a, b = scene.moved.get(a, a), scene.moved.get(b, b)
        if a != b and a in scene.boxes and b in scene.boxes and (a, b) not in seen:
            seen.add((a, b))
            scene.edges.append(Edge(a, b, style="invis"))
