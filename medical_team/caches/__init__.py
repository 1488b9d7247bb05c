"""The compilation caches kept between runs: their one folder, each library's subfolder (cache_folder.py), and vLLM's
compile cache claimed by one run at a time (compile_cache.py). No verl, Ray or vLLM."""
