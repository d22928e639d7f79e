"""The picture engine: live graph -> Snapshot (backward_twice.walk) -> scene -> DOT -> SVG.

- scene.py: the scene, plain data (boxes of rows, edges, clusters, legend entries; no DOT);
- snapshot_boxes.py: the first pass, a Snapshot's ops and tensors as boxes (and the one leaf test);
- one pass per feature: transposes.py (folded TBackward0), far_uses.py (far uses of a shared
  leaf), step_colours.py (fills and a thick path), ran_marks.py (running / ran #k / changed
  .grad), shared_sizes.py (one size per box across a pair or a stepper's frames),
  module_clusters.py (module calls), cap.py (max_nodes), focus.py (focus=),
  repeats.py (a repeated run of op blocks as one xN box);
- build.py runs the passes in order; legend.py lists the marks a scene uses, palette.py what
  each colour means (one meaning each);
- dot_writer.py is the only writer of DOT; layout.py the only caller of Graphviz, and the one
  reader of an SVG's size and rule for readability.
Imports run one way: scene <- palette <- passes <- build <- backward_twice.render <- pictures.
"""
