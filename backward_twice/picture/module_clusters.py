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
    that feed it; branches one below the other)."""
    scene.edges.extend(Edge(a, b, style="invis") for a, b in grouping.invisible)
