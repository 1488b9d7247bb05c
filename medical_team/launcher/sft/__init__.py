"""`medplay sft`'s in-process SFT job: `sft:` composed onto medplay's training config and verl's own SFT trainer run
(sft.py), over the dataset verl's SFT trainer loads (sft_dataset.py)."""
