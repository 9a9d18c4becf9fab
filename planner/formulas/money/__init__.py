"""What a run costs."""
