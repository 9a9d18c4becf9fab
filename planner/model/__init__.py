"""A model's shape: the numbers a transformer is described by, its parameter counts by component (dense, GQA,
mixture of experts, LoRA adapters), and the import of a Hugging Face config.json.
"""
