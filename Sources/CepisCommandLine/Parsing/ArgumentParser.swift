/// A small, table-driven command-line parser: subcommands, `--flag value`, `--flag=value`,
/// `-x value`, `-xvalue`, `-h`/`--help`, `--` and unknown-option errors with a suggestion.
///
/// The same ``CommandSpec`` tables drive parsing and the generated help text, so the two
/// cannot drift apart.

/// One option a command accepts.
struct OptionSpec: Sendable, Equatable {
  /// The long name without dashes (`"format"` for `--format`).
  var long: String
  /// The one-letter short name, if any (`"o"` for `-o`).
  var short: Character?
  /// The placeholder for the option's value in help (`"FILE"`), or `nil` for a flag.
  var valueName: String?
  /// One line of help.
  var help: String

  /// Whether the option takes a value.
  var takesValue: Bool { valueName != nil }

  /// A flag (no value).
  static func flag(_ long: String, short: Character? = nil, _ help: String) -> OptionSpec {
    OptionSpec(long: long, short: short, valueName: nil, help: help)
  }

  /// An option with a value.
  static func value(
    _ long: String, short: Character? = nil, _ valueName: String, _ help: String
  ) -> OptionSpec {
    OptionSpec(long: long, short: short, valueName: valueName, help: help)
  }

  /// How the option is written in help: `-o, --output FILE`.
  var synopsis: String {
    var text = short.map { "-\($0), " } ?? "    "
    text += "--" + long
    if let valueName { text += " " + valueName }
    return text
  }
}

/// One positional argument of a command.
struct PositionalSpec: Sendable, Equatable {
  /// The placeholder in help (`"CEP"`).
  var name: String
  /// One line of help.
  var help: String
  /// Whether it may be left out.
  var optional: Bool = false
  /// Whether it takes every remaining argument.
  var variadic: Bool = false

  /// How the argument is written in a usage line: `CEP...`, `[FILE]`.
  var synopsis: String {
    let base = name + (variadic ? "..." : "")
    return optional ? "[\(base)]" : base
  }
}

/// A command (or the root), its options, arguments and subcommands.
struct CommandSpec: Sendable, Equatable {
  /// The name typed on the command line (`"lookup"`); the root's is the tool's name.
  var name: String
  /// One line saying what it does.
  var abstract: String
  /// Longer text shown after the usage line in `--help`.
  var discussion: String = ""
  /// Options specific to this command (the globals are added by the parser).
  var options: [OptionSpec] = []
  /// Positional arguments, in order.
  var positionals: [PositionalSpec] = []
  /// Subcommands; a command that has some must be given one.
  var subcommands: [CommandSpec] = []

  /// The subcommand called `name`.
  func subcommand(named name: String) -> CommandSpec? {
    subcommands.first { $0.name == name }
  }
}

/// What the parser found: the command to run and its arguments.
struct ParsedArguments: Sendable, Equatable {
  /// The command path below the root (`["cpf", "validate"]`).
  var path: [String]
  /// Option values by long name, in the order given (flags have one `""` per occurrence).
  var options: [String: [String]] = [:]
  /// Positional arguments, in order.
  var positionals: [String] = []

  /// The last value given for `long`, or `nil`.
  func value(_ long: String) -> String? { options[long]?.last }

  /// Whether the flag `long` was given.
  func flag(_ long: String) -> Bool { options[long] != nil }
}

/// What the command line asks for.
enum ParseOutcome: Sendable, Equatable {
  /// Run a command.
  case run(ParsedArguments)
  /// Show the help of the command at this path.
  case help([String])
  /// Show the version.
  case version
}

/// A mistake on the command line: exit status 2, a one-line message and a pointer to help.
struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What is wrong, on one line.
  var message: String
  /// The command path whose `--help` explains the fix.
  var path: [String]

  var description: String { message }
}

/// Parses arguments against a table of commands.
struct ArgumentParser: Sendable {
  /// The root command (the tool).
  var root: CommandSpec
  /// Options every command accepts (help and version included).
  var globals: [OptionSpec]

  /// Parses `arguments` (without the program name).
  ///
  /// - Throws: ``UsageError`` for an unknown command or option, a missing or extra value,
  ///   or a missing argument.
  func parse(_ arguments: [String]) throws(UsageError) -> ParseOutcome {
    var command = root
    var path: [String] = []
    var result = ParsedArguments(path: [])
    // `-h` anywhere (before `--`) wins over every other mistake on the line.
    var helpRequested = arguments.prefix { $0 != "--" }.contains { $0 == "-h" || $0 == "--help" }
    var onlyPositionals = false
    var index = 0

    func fail(_ message: String) -> UsageError { UsageError(message: message, path: path) }

    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
        if !onlyPositionals, !command.subcommands.isEmpty, result.positionals.isEmpty {
          guard let sub = command.subcommand(named: argument) else {
            if helpRequested { continue }
            var message = "unknown command '\(argument)' for '\(display(path))'"
            if let guess = suggestion(for: argument, among: command.subcommands.map(\.name)) {
              message += " (did you mean '\(guess)'?)"
            }
            throw fail(message)
          }
          command = sub
          path.append(sub.name)
          continue
        }
        result.positionals.append(argument)
        continue
      }
      if argument == "--" {
        onlyPositionals = true
        continue
      }
      let options = command.options + globals
      let spec: OptionSpec
      var inlineValue: String?
      if argument.hasPrefix("--") {
        let body = argument.dropFirst(2)
        let name: Substring
        if let equals = body.firstIndex(of: "=") {
          name = body[..<equals]
          inlineValue = String(body[body.index(after: equals)...])
        } else {
          name = body
        }
        guard let found = options.first(where: { $0.long == name }) else {
          if helpRequested { continue }
          var message = "unknown option '--\(name)'"
          if let guess = suggestion(for: String(name), among: options.map(\.long)) {
            message += " (did you mean '--\(guess)'?)"
          }
          throw fail(message)
        }
        spec = found
      } else {
        let letter = argument[argument.index(after: argument.startIndex)]
        guard let found = options.first(where: { $0.short == letter }) else {
          if helpRequested { continue }
          throw fail("unknown option '\(argument)'")
        }
        spec = found
        let rest = argument.dropFirst(2)
        if !rest.isEmpty {
          guard spec.takesValue else {
            throw fail("unknown option '\(argument)' (options cannot be combined)")
          }
          inlineValue = String(rest.hasPrefix("=") ? rest.dropFirst() : rest)
        }
      }
      if spec.long == "help" {
        helpRequested = true
        continue
      }
      if spec.long == "version" && !helpRequested {
        return .version
      }
      if spec.takesValue {
        let value: String
        if let inlineValue {
          value = inlineValue
        } else if index < arguments.count {
          value = arguments[index]
          index += 1
        } else {
          if helpRequested { continue }
          throw fail("option '--\(spec.long)' needs a value (\(spec.valueName ?? "VALUE"))")
        }
        result.options[spec.long, default: []].append(value)
      } else {
        if inlineValue != nil {
          if helpRequested { continue }
          throw fail("option '--\(spec.long)' takes no value")
        }
        result.options[spec.long, default: []].append("")
      }
    }
    if helpRequested { return .help(path) }
    if !command.subcommands.isEmpty {
      let names = command.subcommands.map(\.name).joined(separator: ", ")
      if path.isEmpty { throw fail("missing command (one of: \(names))") }
      throw fail("'\(display(path))' needs a subcommand (one of: \(names))")
    }
    try checkPositionals(result.positionals, for: command, path: path)
    result.path = path
    return .run(result)
  }

  private func checkPositionals(
    _ values: [String], for command: CommandSpec, path: [String]
  ) throws(UsageError) {
    let required = command.positionals.filter { !$0.optional }
    if values.count < required.count {
      let missing = required[values.count]
      throw UsageError(message: "missing argument \(missing.synopsis)", path: path)
    }
    let variadic = command.positionals.contains { $0.variadic }
    if !variadic && values.count > command.positionals.count {
      let extra = values[command.positionals.count]
      throw UsageError(message: "unexpected argument '\(extra)'", path: path)
    }
  }

  /// The command at `path`, or the root.
  func command(at path: [String]) -> CommandSpec {
    var command = root
    for name in path {
      guard let sub = command.subcommand(named: name) else { break }
      command = sub
    }
    return command
  }

  /// `cepis cpf validate` for `["cpf", "validate"]`.
  func display(_ path: [String]) -> String {
    ([root.name] + path).joined(separator: " ")
  }

  /// The help text of the command at `path`, generated from the table.
  func help(for path: [String], footer: String = "") -> String {
    let command = command(at: path)
    let name = display(path)
    var lines: [String] = []
    lines.append("\(name) — \(command.abstract)")
    lines.append("")
    var usage = "Usage: \(name)"
    if !command.subcommands.isEmpty {
      usage += " <command>"
    }
    usage += " [options]"
    for positional in command.positionals { usage += " " + positional.synopsis }
    lines.append(usage)
    if !command.discussion.isEmpty {
      lines.append("")
      lines.append(command.discussion)
    }
    if !command.subcommands.isEmpty {
      lines.append("")
      lines.append("Commands:")
      lines += table(command.subcommands.map { ($0.name, $0.abstract) })
    }
    if !command.positionals.isEmpty {
      lines.append("")
      lines.append("Arguments:")
      lines += table(command.positionals.map { ($0.synopsis, $0.help) })
    }
    if !command.options.isEmpty {
      lines.append("")
      lines.append("Options:")
      lines += table(command.options.map { ($0.synopsis, $0.help) })
    }
    lines.append("")
    lines.append("Global options:")
    lines += table(globals.map { ($0.synopsis, $0.help) })
    if !footer.isEmpty {
      lines.append("")
      lines.append(footer)
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private func table(_ rows: [(String, String)]) -> [String] {
    let width = min(28, rows.map(\.0.count).max() ?? 0)
    return rows.map { left, right in
      let padded =
        left.count >= width
        ? left + "  " : left + String(repeating: " ", count: width - left.count + 2)
      if left.count > width {
        return "  " + left + "\n  " + String(repeating: " ", count: width + 2) + right
      }
      return "  " + padded + right
    }
  }
}

/// The closest of `candidates` to `word`, when it is close enough to be a likely typo.
func suggestion(for word: String, among candidates: [String]) -> String? {
  let scored = candidates.map { ($0, editDistance(word, $0)) }
  guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
  let limit = max(1, min(3, word.count / 3 + 1))
  if best.1 <= limit { return best.0 }
  // A prefix (`--form` for `--format`) is also a good guess.
  if word.count >= 3, let prefixed = candidates.first(where: { $0.hasPrefix(word) }) {
    return prefixed
  }
  return nil
}

/// The Levenshtein distance between two strings, by characters.
func editDistance(_ left: String, _ right: String) -> Int {
  let a = Array(left)
  let b = Array(right)
  if a.isEmpty { return b.count }
  if b.isEmpty { return a.count }
  var previous = Array(0...b.count)
  var current = Array(repeating: 0, count: b.count + 1)
  for i in 1...a.count {
    current[0] = i
    for j in 1...b.count {
      let cost = a[i - 1] == b[j - 1] ? 0 : 1
      current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
    }
    swap(&previous, &current)
  }
  return previous[b.count]
}
