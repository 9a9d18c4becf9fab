"""Post-training: the models beside the policy (reference, reward, value) and rollout generation."""
