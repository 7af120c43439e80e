"""Pre-training data: raw text -> TFRecords -> batches.

Modules, in the order the data flows:

* `corpus`: reading raw text (one sentence per line, blank line between documents).
* `example_builder`: packing token ids into `[CLS] A [SEP] B [SEP]` examples.
* `tfrecord_format`: the feature names on disk and a fast `tf.train.Example` encoder.
* `tfrecord_writer`: `build_pretraining_data`: text -> sharded TFRecords + stats.
* `pretraining_dataset`: `make_pretraining_dataset`, the training input pipeline.

Vocabularies and tokenizers are in `electra_tf.data.vocabulary`.
"""
