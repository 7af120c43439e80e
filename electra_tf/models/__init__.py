"""The networks, one class per file (keras-hub style).

* `encoder`: `ElectraEncoder`, the transformer of both towers (a keras-hub `Backbone`),
  built from `transformer_layer.ElectraTransformerLayer` and
  `hashed_dropout.HashedDropout`.
* `tower`: what the generator and the discriminator share (inputs, serialisation).
* `generator`: `ElectraGenerator`, the small masked-language model.
* `discriminator`: `ElectraDiscriminator`, the encoder with its replaced-token head.
* `all_tokens_mlm`: All-Tokens MLM's model (an MLM head at every position, copy gate).
* `text_classifier`, `text_classifier_preprocessor`: `ElectraTextClassifier` and its
  preprocessor, on keras-hub's task API (fine-tuning).
* `question_answerer`, `question_answerer_preprocessor`, `span_head`:
  `ElectraQuestionAnswerer` (SQuAD), its windowing preprocessor and XLNet's span
  head as ELECTRA uses it; `span_decoding`: the best answer span of a question
  over all its windows (what the model and its SavedModel answer with).
* `token_classifier`, `token_classifier_preprocessor`: `ElectraTokenClassifier` (one
  tag per word) and its preprocessor (words or raw text -> WordPiece windows).
* `in_memory`: in-memory inputs of those tasks as a dataset shuffled every epoch.
* `keras_hub_preset`: the encoder as a keras-hub `ElectraBackbone` preset, written
  and read (the one loader the task models' `from_preset` use).
"""
