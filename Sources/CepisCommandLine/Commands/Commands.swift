/// The tool's command table: one place that both the parser and `--help` read.
enum Commands {
  static let formatOption = OptionSpec.value(
    "format", "FORMAT", "text, json, ndjson or csv (default: text)")

  static let globals: [OptionSpec] = [
    .value("base-url", "URL", "the API's address (env CEPIS_BASE_URL; default https://cep.is)"),
    .value("timeout", "SECONDS", "deadline of each HTTP attempt (default 10)"),
    .value("attempts", "N", "attempts per request, the first included (default 3)"),
    .value("total-timeout", "SECONDS", "deadline of a whole request, retries included"),
    .value(
      "rate", "RATE",
      "send at most this many requests to the API: N/s or N/min (env CEPIS_RATE; default "
        + "none: bulk commands still slow down on the API's 429s)"),
    .value(
      "transport", "NAME",
      "urlsession or async-http-client (env CEPIS_TRANSPORT; default: the build's best)"),
    .value(
      "proxy", "URL",
      "send requests through this HTTP proxy, http://host[:port] (default: http_proxy, "
        + "https_proxy, all_proxy; no_proxy applies either way)"),
    .flag("verbose", short: "v", "log each request, retry, fallback and cache result to stderr"),
    .value(
      "log-level", "LEVEL",
      "log to stderr at this level: trace (every attempt's start too) or debug (as --verbose)"),
    .value(
      "cacert", "FILE",
      "trust the CA certificates in this PEM file too, besides the system's (env "
        + "CEPIS_CA_BUNDLE; not with urlsession on Linux)"),
    .flag("help", short: "h", "show help for the command"),
    .flag("version", "show the version"),
  ]

  static let lookup = CommandSpec(
    name: "lookup", abstract: "look up one address per CEP",
    discussion: """
      Addresses go to stdout; CEPs not found or invalid are reported on stderr (text)
      or as a status field (json, ndjson, csv).

      Fallbacks: when cep.is cannot answer (unreachable, 5xx, 429, timeout; never when it
      says a CEP does not exist), ViaCEP and/or BrasilAPI are asked, in the order listed,
      once each. An address from a fallback is marked "(from ViaCEP)" in text and has
      "source" in json, ndjson and csv. LIST: viacep, brasilapi, none; NAME=URL points a
      provider elsewhere (e.g. viacep=http://127.0.0.1:8080, where `cepis mock` serves
      both providers' routes).
      """,
    options: [
      formatOption,
      .value(
        "fallback", "LIST",
        "ask these when cep.is cannot answer: viacep,brasilapi (env CEPIS_FALLBACK)"),
      .value(
        "hedge-after", "SECONDS",
        "ask the first fallback too if cep.is has not answered by then"),
    ] + CacheOptions.specs,
    positionals: [PositionalSpec(name: "CEP", help: "a CEP, masked or not", variadic: true)])

  static let batch = CommandSpec(
    name: "batch", abstract: "look up CEPs read one per line, through the batch endpoint",
    discussion: "Prints one result per input line, in the same order (a blank line gives an\n"
      + "'invalid' result). Reads stdin when FILE is '-' or absent. From a pipe or a\n"
      + "terminal, the lines read are answered while the input pauses, and output is\n"
      + "flushed within 0.1 s of an answer. Answers are kept in the address cache (see\n"
      + "'cepis cache'): a CEP is asked again only when the DNE edition changes.\n"
      + "A CSV file works too: when its first line is a header with a CEP column (any\n"
      + "case, accents or spaces; --column names another), the CEPs are that column's,\n"
      + "the delimiter (',', ';' or tab) and encoding (UTF-8, else Windows-1252) detected.\n"
      + "A CEP of exactly 7 digits is read with the leading 0 a spreadsheet dropped, its\n"
      + "status 'ok_padded' or 'not_found_padded'; --strict-cep turns it off. Output is\n"
      + "UTF-8 in every format.",
    options: [
      formatOption,
      .value("column", "NAME", "read a CSV file's CEPs from this column (default: 'cep')"),
    ] + DialectOptions.specs + CacheOptions.specs,
    positionals: [PositionalSpec(name: "FILE", help: "CEPs, one per line", optional: true)])

  static let enrich = CommandSpec(
    name: "enrich", abstract: "append addresses to every row of a CSV file",
    discussion: """
      Appends logradouro, complemento, bairro, localidade, uf, ibge and cepis_status
      (ok, not_found, invalid, error: <kind>) to each row. One output row per input row,
      in input order; input bytes, quoting, BOM and line ends are kept. Blank lines are
      copied as they are. Each distinct CEP is asked once per run while the memo holds
      it, 500 to a request; a partial request only at the end of the input or when the
      read-ahead is full and its oldest row waits for a CEP no request carries. The
      summary shows the requests sent, the fewest possible and the cache hits.
      Answers are kept in the address cache (see 'cepis cache'): a second run over the
      same CEPs sends one request (the DNE edition check) and no lookups, until the
      edition changes; --no-cache asks the network for everything.
      Ctrl-C writes the rows already answered, leaving a valid CSV; --resume continues it
      (with an empty memo: CEPs answered before the interruption are asked again).
      Files from Excel: the delimiter (',', ';' or tab) is the one the header line uses
      most; the encoding is UTF-8 (BOM or not) or, when the file is not valid UTF-8,
      Windows-1252 (one notice), and the output is written in it, the appended columns
      with the same delimiter. The CEP column is found without regard to case, accents
      or spaces. A CEP of exactly 7 digits is read with the leading 0 a spreadsheet
      dropped, its status 'ok_padded' or 'not_found_padded'; --strict-cep turns it off.
      A found address Windows-1252 cannot hold is left out, status 'unencodable'.
      """,
    options: [
      .value("output", short: "o", "FILE", "where to write (default: stdout)"),
      .value(
        "column", "NAME",
        "the column holding the CEP (default: 'cep', any case, accents or spaces)"),
      .flag("resume", "continue an interrupted run: keep OUTPUT's complete rows, do the rest"),
      .flag("fail-fast", "stop with exit 3 at the first chunk that still fails after retries"),
      .flag("progress", "show progress on stderr even when it is not a terminal"),
      .flag("quiet", short: "q", "no progress and no text summary"),
      .value("memo", "N", "answers kept, in distinct CEPs; least recent dropped (default 400000)"),
      .value(
        "window", "ROWS",
        "rows read ahead of the oldest row still waiting for its answer (default 20000)"),
      .value(
        "format", "FORMAT",
        "the summary: text (stderr) or json (stdout with -o FILE, else stderr)"),
    ] + DialectOptions.specs + [DialectOptions.outputSpec] + CacheOptions.specs,
    positionals: [PositionalSpec(name: "INPUT", help: "a CSV file with a header row, or '-'")])

  static let health = CommandSpec(
    name: "health", abstract: "show the API's status and DNE version",
    discussion: "Exit status 0 when healthy, 1 when the API reports itself degraded.",
    options: [formatOption])

  static let uf = CommandSpec(
    name: "uf", abstract: "show the state of each CEP from the CEP ranges (offline)",
    options: [formatOption],
    positionals: [PositionalSpec(name: "CEP", help: "a CEP, masked or not", variadic: true)])

  static let cpf = CommandSpec(
    name: "cpf", abstract: "validate or look up CPFs",
    subcommands: [
      CommandSpec(
        name: "validate", abstract: "check CPFs offline and print them formatted",
        options: [formatOption],
        positionals: [PositionalSpec(name: "CPF", help: "a CPF, masked or not", variadic: true)]),
      CommandSpec(
        name: "lookup", abstract: "look a CPF up through CPFHub (key from CPFHUB_API_KEY)",
        discussion: "Env CPFHUB_API_KEY holds the key; CPFHUB_BASE_URL overrides the address.",
        options: [
          formatOption,
          .value("cpfhub-url", "URL", "CPFHub's address (env CPFHUB_BASE_URL)"),
        ],
        positionals: [PositionalSpec(name: "CPF", help: "the CPF to look up")]),
    ])

  static let cnpj = CommandSpec(
    name: "cnpj", abstract: "validate CNPJs",
    subcommands: [
      CommandSpec(
        name: "validate", abstract: "check CNPJs offline (numeric or alphanumeric)",
        options: [formatOption],
        positionals: [
          PositionalSpec(name: "CNPJ", help: "a CNPJ, masked or not", variadic: true)
        ])
    ])

  static let mock = CommandSpec(
    name: "mock", abstract: "run the CepisMock server in the foreground",
    discussion: """
      Prints its base URL on the first line of stdout; stops on SIGINT/SIGTERM.

      --rate-limit ROUTE=LIMIT limits one route (cep, csv, health, cpf, viacep, brasilapi)
      as the real services do. LIMIT is either
        RATE[,burst=N][,retry-after=SECONDS|date]   a token bucket: RATE is N/s or N/min
            (5/s, 0.5/s, 30/min); burst defaults to one second's requests (at least 1);
            past it, 429 with Retry-After (default: whole seconds until the next token;
            'date' sends an HTTP-date)
        block,after=N,within=DURATION,for=DURATION  after N requests within a sliding
            window, 403 text/html for DURATION (seconds, or 90s, 30min, 2h); blocked
            requests do not extend the block
      Repeat the option to give one route both (the block is checked first), e.g.
        --rate-limit viacep=block,after=550,within=2h,for=1h --rate-limit viacep=10/s
      POST /__mock/reset restores these limits.

      --tls (builds with the AsyncHTTPClient trait) serves the same routes over HTTPS on
      https://localhost:PORT, with a certificate from a certificate authority made at start
      (its key never leaves the process): the first line of stdout is then the https URL,
      the second the path of the authority's certificate, for --cacert or curl --cacert.
      """,
    options: [
      .value("port", "N", "port on 127.0.0.1 (default 0: any free port)"),
      .value("data", "FILE", "dataset file (default: the built-in sample)"),
      .value("chaos", "SEED:RATE", "inject random faults (e.g. 7:0.3)"),
      .value("cpf-key", "KEY", "accept this CPFHub API key (repeatable)"),
      .value(
        "rate-limit", "ROUTE=LIMIT",
        "limit a route's rate, e.g. csv=5/s,burst=5 (repeatable; see above)"),
      .flag("tls", "serve over HTTPS with a CA made at start; print its certificate's path"),
    ])

  static let cache = CommandSpec(
    name: "cache", abstract: "show or clear the address cache",
    discussion: """
      lookup, batch and enrich keep cep.is's answers in a file, tied to the Correios DNE
      edition they belong to: a CEP is asked again only when the edition changes. Another
      server's answers (--base-url) are kept in a file of their own.
      """,
    subcommands: [
      CommandSpec(
        name: "info", abstract: "the cache's path, size, entries per DNE edition",
        options: [formatOption] + CacheOptions.specs),
      CommandSpec(
        name: "clear", abstract: "forget every cached answer",
        options: CacheOptions.specs),
    ])

  static let root = CommandSpec(
    name: "cepis", abstract: "Brazilian addresses from CEPs (official Correios DNE data)",
    subcommands: [lookup, batch, enrich, health, uf, cpf, cnpj, cache, mock])

  static let parser = ArgumentParser(root: root, globals: globals)

  static let exitStatusHelp = """
    Exit status:
      0    all good
      1    something was not found or invalid (the rest was still printed)
      2    usage error
      3    the API could not be reached or kept failing after retries
      130  interrupted (Ctrl-C)
    """

  /// The help text of the command at `path`.
  static func help(for path: [String]) -> String {
    var footer = exitStatusHelp
    if path.isEmpty {
      footer = "Run 'cepis <command> --help' for a command's options.\n\n" + footer
    }
    return parser.help(for: path, footer: footer)
  }
}
