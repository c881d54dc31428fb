print("cepis-bench: under construction")
