"""Pre-training data: raw text -> TFRecords -> batches.

Modules, in the order the data flows:

* `corpus`: reading raw text (one sentence per line, blank line between documents).
* `vocabulary`: `Vocabulary` (a validated vocab.txt with its casing and special
  ids), `learn_vocabulary`, and `check_vocabulary_fits` (vocabulary size =
  embedding rows).
* `example_builder`: packing token ids into `[CLS] A [SEP] B [SEP]` examples.
* `tfrecord_format`: the feature names on disk and a fast `tf.train.Example` encoder.
* `tfrecord_writer`: `build_pretraining_data`: text -> sharded TFRecords + stats.
* `input_pipeline`: `make_pretraining_dataset`, the training input pipeline.
* `preparation`: a run's data in one call (`prepare_pretraining_data`), and
  `pretrain/build_data.py`'s work (`build_corpus_data`).
"""
