"""Chat templates: where they come from, the two engines that render them, the built-in
conversations, the control-token literals they write, and the TA8xx rules."""
