"""The data path: vocabulary, the `.bin` format, raw-text tokenization into stories,
example ops and the tf.data pipeline that turns `.bin` files into model batches."""
