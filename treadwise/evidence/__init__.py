"""What a conversation holds that a tool call may use, and the rules that derive values from it."""
