import Testing

@testable import CepisCommandLine

@Suite("Argument parser")
struct ParserTests {
  let parser = ArgumentParser(
    root: CommandSpec(
      name: "tool", abstract: "a tool",
      subcommands: [
        CommandSpec(
          name: "get", abstract: "get things",
          options: [
            .value("format", "FORMAT", "the format"), .value("output", short: "o", "FILE", "out"),
            .flag("quiet", short: "q", "quiet"),
          ],
          positionals: [PositionalSpec(name: "ID", help: "ids", variadic: true)]),
        CommandSpec(
          name: "doc", abstract: "documents",
          subcommands: [
            CommandSpec(
              name: "check", abstract: "check",
              positionals: [PositionalSpec(name: "X", help: "x")])
          ]),
        CommandSpec(
          name: "read", abstract: "read",
          positionals: [PositionalSpec(name: "FILE", help: "f", optional: true)]),
      ]),
    globals: [
      .value("timeout", "SECONDS", "t"), .flag("help", short: "h", "help"),
      .flag("version", "version"),
    ])

  func run(_ arguments: [String]) throws -> ParsedArguments {
    guard case .run(let parsed) = try parser.parse(arguments) else {
      throw UsageError(message: "not a run", path: [])
    }
    return parsed
  }

  func usageError(_ arguments: [String]) -> UsageError? {
    do {
      _ = try parser.parse(arguments)
      return nil
    } catch {
      return error
    }
  }

  @Test func subcommandWithPositionalsAndOptions() throws {
    let parsed = try run(["get", "--format", "json", "a", "-o", "out.csv", "b", "-q"])
    #expect(parsed.path == ["get"])
    #expect(parsed.positionals == ["a", "b"])
    #expect(parsed.value("format") == "json")
    #expect(parsed.value("output") == "out.csv")
    #expect(parsed.flag("quiet"))
    #expect(!parsed.flag("help"))
  }

  @Test func equalsAndAttachedShortValues() throws {
    let parsed = try run(["get", "--format=csv", "-oout.csv", "--timeout=2.5", "x"])
    #expect(parsed.value("format") == "csv")
    #expect(parsed.value("output") == "out.csv")
    #expect(parsed.value("timeout") == "2.5")
    let empty = try run(["get", "--format=", "x"])
    #expect(empty.value("format") == "")
  }

  @Test func globalOptionsBeforeTheCommand() throws {
    let parsed = try run(["--timeout", "3", "get", "x"])
    #expect(parsed.path == ["get"])
    #expect(parsed.value("timeout") == "3")
  }

  @Test func lastValueWins() throws {
    let parsed = try run(["get", "--format", "json", "--format", "csv", "x"])
    #expect(parsed.value("format") == "csv")
    #expect(parsed.options["format"] == ["json", "csv"])
  }

  @Test func doubleDashEndsOptions() throws {
    let parsed = try run(["get", "--", "--format", "-q", "-"])
    #expect(parsed.positionals == ["--format", "-q", "-"])
    #expect(parsed.value("format") == nil)
  }

  @Test func singleDashIsAPositional() throws {
    let parsed = try run(["read", "-"])
    #expect(parsed.positionals == ["-"])
  }

  @Test func nestedSubcommands() throws {
    let parsed = try run(["doc", "check", "123"])
    #expect(parsed.path == ["doc", "check"])
    #expect(parsed.positionals == ["123"])
  }

  @Test func helpAnywhere() throws {
    #expect(try parser.parse(["-h"]) == .help([]))
    #expect(try parser.parse(["get", "--help"]) == .help(["get"]))
    #expect(try parser.parse(["doc", "-h", "check"]) == .help(["doc", "check"]))
    #expect(try parser.parse(["get", "--bogus", "-h"]) == .help(["get"]))
  }

  @Test func version() throws {
    #expect(try parser.parse(["--version"]) == .version)
    #expect(try parser.parse(["get", "--version"]) == .version)
  }

  @Test func unknownOptionSuggestsTheClosest() {
    let error = usageError(["get", "--formt", "json", "x"])
    #expect(error?.message == "unknown option '--formt' (did you mean '--format'?)")
    #expect(error?.path == ["get"])
    let far = usageError(["get", "--zzzzzzzz", "x"])
    #expect(far?.message == "unknown option '--zzzzzzzz'")
    #expect(usageError(["get", "-x"])?.message == "unknown option '-x'")
  }

  @Test func unknownCommandSuggestsTheClosest() {
    #expect(
      usageError(["gte"])?.message == "unknown command 'gte' for 'tool' (did you mean 'get'?)")
    #expect(usageError(["doc", "chek", "1"])?.path == ["doc"])
  }

  @Test func missingPieces() {
    #expect(usageError([])?.message.hasPrefix("missing command") == true)
    #expect(usageError(["doc"])?.message.contains("needs a subcommand") == true)
    #expect(usageError(["get"])?.message == "missing argument ID...")
    #expect(usageError(["get", "x", "--format"])?.message.contains("needs a value") == true)
    #expect(usageError(["doc", "check", "1", "2"])?.message == "unexpected argument '2'")
    #expect(usageError(["get", "--quiet=yes", "x"])?.message == "option '--quiet' takes no value")
  }

  @Test func optionalPositional() throws {
    #expect(try run(["read"]).positionals.isEmpty)
  }

  @Test func helpIsGeneratedFromTheTable() {
    let help = parser.help(for: ["get"], footer: "FOOTER")
    #expect(help.hasPrefix("tool get — get things\n"))
    #expect(help.contains("Usage: tool get [options] ID..."))
    #expect(help.contains("-o, --output FILE"))
    #expect(help.contains("--format FORMAT"))
    #expect(help.contains("Global options:"))
    #expect(help.contains("--timeout SECONDS"))
    #expect(help.hasSuffix("FOOTER\n"))
    let root = parser.help(for: [])
    #expect(root.contains("Commands:"))
    #expect(root.contains("  get "))
  }

  @Test func editDistances() {
    #expect(editDistance("", "abc") == 3)
    #expect(editDistance("kitten", "sitting") == 3)
    #expect(editDistance("format", "format") == 0)
    #expect(editDistance("formt", "format") == 1)
    #expect(suggestion(for: "lookpu", among: ["lookup", "batch"]) == "lookup")
    #expect(suggestion(for: "xyz", among: ["lookup", "batch"]) == nil)
    #expect(suggestion(for: "prog", among: ["progress", "port"]) == "progress")
  }

  @Test func realTableEveryCommandHasHelp() {
    let parser = Commands.parser
    for command in Commands.root.subcommands {
      let help = Commands.help(for: [command.name])
      #expect(help.contains("Usage: cepis \(command.name)"))
      #expect(help.contains("Exit status:"))
      for sub in command.subcommands {
        #expect(Commands.help(for: [command.name, sub.name]).contains(sub.abstract))
      }
    }
    #expect(parser.display(["cpf", "validate"]) == "cepis cpf validate")
  }
}
