"""Exports of trained models.

* `pretrained`: what a pre-training run exports (keras-hub preset, `.keras`
  files, serving and sentence-scoring SavedModels) and `load_generator`.
* `tf_hub`: the encoder and its text preprocessing, TF-Hub style.
* `classifier`: a fine-tuned classifier's raw-text serving SavedModel.
* `question_answerer`: a fine-tuned question answerer's raw-text SavedModel.
* `token_classifier`: a fine-tuned tagger's: text in, words, tags and offsets out.
* `litert`: any task model or the discriminator as LiteRT (`.tflite`) models,
  float32 or int8, on token ids (`electra-export-litert`).
* `saved_model`: `save_saved_model`, which every SavedModel above is saved
  with (TensorFlow's notices about renamed inputs left out).
* `float32`: `float32_model`, the float32 copy of a model that every export
  above (and fine-tuning's `.keras` file) is made from, whatever precision
  trained it.

Every serving signature first runs `electra_tf.request_checks` on its inputs
(a bad request: `InvalidArgumentError` naming the input, never a crash).
"""
