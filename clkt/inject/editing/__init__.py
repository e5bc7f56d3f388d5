"""Knowledge editing (the `memit` strategy, `clkt.inject.strategies.memit`): edit requests from the train
language's facts (`requests`), the MLP down-projection per architecture (`arch`), the keys' statistics from the
project's own text, cached per model x layer (`covariance`), the edits' target values (`values`) and the
closed-form update of each edited layer (`memit_update`)."""
