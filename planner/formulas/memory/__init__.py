"""Memory per GPU: bytes per parameter by recipe, model states, activations, the loading peak and the peak over a step's phases."""
