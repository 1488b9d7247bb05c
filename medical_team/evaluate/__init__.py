"""MEDEC benchmark scoring (MEDIQA-CORR 2024 definitions), evaluation reports and training-report plots."""
