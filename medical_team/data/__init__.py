"""MEDEC loading and cleaning, game seeds, splits, and the verl / OpenRLHF file formats."""
