print("cepis: under construction")
