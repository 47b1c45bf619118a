"""Summarizing: the public API for raw text over a trained experiment or an exported
model (`pg.Summarizer`, `pg.SavedModelSummarizer`, `pg.summarize_texts`), and opening a
trained experiment (`trained.open_trained`), which decode mode, export and serve use too."""
