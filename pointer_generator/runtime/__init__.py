"""What every job shares: the experiment directory, checkpoint files, TensorBoard
summaries, progress lines, Ctrl-C handling and a quick process exit."""
