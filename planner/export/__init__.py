"""Configuration exports: a plan written as the configuration file another training framework runs.

One module per target (DeepSpeed config JSON, accelerate YAML, torchtune recipe YAML, torchtitan TOML, Megatron-LM
arguments), each writing only options that target documents and listing in words what of the plan it cannot
express; `export_plan` in planner.export.exporters picks the target.
"""
