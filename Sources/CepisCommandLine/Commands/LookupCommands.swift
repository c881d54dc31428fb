import BrazilianDocuments
import Cepis
import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// `cepis lookup CEP…`: one request per CEP (with coordinates), a few in flight.
enum LookupCommand {
  static func run(_ context: Context) async throws -> ToolStatus {
    let format = try context.format()
    let fallbacks = try FallbackOptions.fallbacks(context)
    let hedgeAfter = try FallbackOptions.hedgeAfter(context, fallbacks: fallbacks)
    let client = try context.client(fallbacks: fallbacks, hedgeAfter: hedgeAfter, cached: true)
    let inputs = context.parsed.positionals
    var results = [CEPResult?](repeating: nil, count: inputs.count)
    await withTaskGroup(of: (Int, CEPResult).self) { group in
      var next = 0
      func add() {
        let index = next
        let input = inputs[index]
        next += 1
        group.addTask {
          do {
            let address = try await client.lookup(input)
            return (index, CEPResult(input: input, resolution: .found(address)))
          } catch let error as CepisError {
            switch error {
            case .cepNotFound: return (index, CEPResult(input: input, resolution: .notFound))
            case .invalidCEP where (try? normalizeCEP(input)) == nil:
              return (index, CEPResult(input: input, resolution: .invalid))
            default: return (index, CEPResult(input: input, resolution: .failed(error)))
            }
          } catch {
            let failure = CepisError.networkError(message: "\(error)")
            return (index, CEPResult(input: input, resolution: .failed(failure)))
          }
        }
      }
      for _ in 0..<min(4, inputs.count) { add() }
      while let (index, result) = await group.next() {
        results[index] = result
        if next < inputs.count { add() }
      }
    }
    let console = context.console
    var writer = RecordWriter(format: format, console: console, csvHeader: CEPResult.csvHeader)
    writer.begin()
    for case let result? in results {
      console.noteFailure(in: result.status)
      if format == .text && result.status != .ok {
        console.error(result.message ?? result.status.label)
        continue
      }
      writer.write(
        text: result.textLine(bold: console.stdoutColor), json: result.appendJSON,
        csv: result.appendCSV)
    }
    writer.end()
    return ToolStatus.of(results.compactMap { $0?.status })
  }
}

/// `cepis health`.
enum HealthCommand {
  static func run(_ context: Context) async throws -> ToolStatus {
    let format = try context.format()
    let client = try context.client()
    let health: Health
    do {
      health = try await client.health()
    } catch let error as CepisError {
      context.console.error(error.message)
      if case .networkError = error { context.console.noteNetworkFailure() }
      return .unavailable
    }
    let json = JSONValue.object([
      ("ok", .bool(health.ok)), ("status", .string(health.status)), ("dne", .string(health.dne)),
      ("ceps", .int(health.ceps)), ("base_gerada_em", .string(health.baseGeradaEm)),
      ("base_url", .string(client.baseURL.absoluteString)),
    ])
    if format == .json {
      // One report: a single object rather than an array.
      context.console.out(json.rendered + "\n")
      return health.ok ? .success : .failure
    }
    var writer = RecordWriter(
      format: format, console: context.console,
      csvHeader: ["ok", "status", "dne", "ceps", "base_gerada_em", "base_url"])
    writer.begin()
    var text = "\(health.status)  DNE \(health.dne.isEmpty ? "?" : health.dne)"
    text += "  \(health.ceps) CEPs"
    if !health.baseGeradaEm.isEmpty { text += "  generated \(health.baseGeradaEm)" }
    text += "  (\(client.baseURL.absoluteString))"
    writer.write(
      text: text, json: json,
      csv: [
        health.ok ? "true" : "false", health.status, health.dne, String(health.ceps),
        health.baseGeradaEm, client.baseURL.absoluteString,
      ])
    writer.end()
    return health.ok ? .success : .failure
  }
}

/// `cepis uf CEP…`: the state from the CEP ranges, offline.
enum UFCommand {
  static func run(_ context: Context) throws -> ToolStatus {
    let format = try context.format()
    let console = context.console
    var writer = RecordWriter(
      format: format, console: console,
      csvHeader: ["input", "cep", "status", "uf", "name", "region"])
    writer.begin()
    var worst = ToolStatus.success
    for input in context.parsed.positionals {
      let cep = try? normalizeCEP(input)
      let uf = cep.flatMap { UF(cep: $0) }
      let status: String
      if cep == nil {
        status = "invalid"
      } else if uf == nil {
        status = "not_found"
      } else {
        status = "ok"
      }
      if uf == nil { worst = .failure }
      if format == .text, uf == nil {
        console.error(
          cep == nil
            ? "invalid CEP '\(input)': expected 8 digits, as in 01001-000"
            : "CEP \(maskedCEP(cep ?? input)) is in no state's CEP range")
        continue
      }
      let json = JSONValue.object([
        ("input", .string(input)), ("cep", .optional(cep)), ("status", .string(status)),
        ("uf", .optional(uf?.rawValue.uppercased())), ("name", .optional(uf?.name)),
        ("region", .optional(uf?.region.name)),
      ])
      let code = uf?.rawValue.uppercased() ?? ""
      writer.write(
        text:
          "\(maskedCEP(cep ?? input))  \(code)  \(uf?.name ?? "")  (\(uf?.region.name ?? ""))",
        json: json,
        csv: [input, cep ?? "", status, code, uf?.name ?? "", uf?.region.name ?? ""])
    }
    writer.end()
    return worst
  }
}

/// `cepis cpf validate`, `cepis cnpj validate`: offline checks.
enum DocumentCommands {
  static func validateCPF(_ context: Context) throws -> ToolStatus {
    try validate(context) { input throws(DocumentError) in try CPF(input).formatted }
  }

  static func validateCNPJ(_ context: Context) throws -> ToolStatus {
    try validate(context) { input throws(DocumentError) in try CNPJ(input).formatted }
  }

  private static func validate(
    _ context: Context, _ check: (String) throws(DocumentError) -> String
  ) throws -> ToolStatus {
    let format = try context.format()
    let console = context.console
    var writer = RecordWriter(
      format: format, console: console, csvHeader: ["input", "valid", "formatted", "error"])
    writer.begin()
    var worst = ToolStatus.success
    for input in context.parsed.positionals {
      do throws(DocumentError) {
        let formatted = try check(input)
        writer.write(
          text: formatted,
          json: .object([
            ("input", .string(input)), ("valid", .bool(true)), ("formatted", .string(formatted)),
            ("error", .null),
          ]),
          csv: [input, "true", formatted, ""])
      } catch {
        worst = .failure
        if format == .text {
          console.error(error.message)
          continue
        }
        writer.write(
          text: "",
          json: .object([
            ("input", .string(input)), ("valid", .bool(false)), ("formatted", .null),
            ("error", .string(error.message)),
          ]),
          csv: [input, "false", "", error.message])
      }
    }
    writer.end()
    return worst
  }
}

/// An input file (or stdin) read in 64 KiB chunks with `read(2)`.
final class InputFile {
  let fd: Int32
  let path: String
  private let owned: Bool
  /// The size in bytes when it is a regular file.
  let size: Int?

  struct OpenError: Error, CustomStringConvertible {
    var description: String
  }

  init(path: String) throws {
    self.path = path
    if path == "-" {
      fd = 0
      owned = false
    } else {
      let opened = open(path, O_RDONLY)
      guard opened >= 0 else {
        throw OpenError(description: "cannot open '\(path)': \(String(cString: strerror(errno)))")
      }
      fd = opened
      owned = true
    }
    var info = stat()
    if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
      size = Int(info.st_size)
    } else {
      size = nil
    }
  }

  /// About how many lines the file holds, from the line ends in its first 64 KiB (read with
  /// `pread`: the file's offset is left alone); 0 when it is not a regular file, or that much
  /// of it holds no line end.
  func estimatedLines() -> Int {
    guard let size, size > 0 else { return 0 }
    var sample = [UInt8](repeating: 0, count: min(size, 1 << 16))
    let count = sample.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    guard count > 0 else { return 0 }
    let lines = sample[..<count].reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
    guard lines > 0 else { return 0 }
    return Int(Double(size) * Double(lines) / Double(count))
  }

  /// The next chunk; empty at the end of the input.
  func read(max: Int = 1 << 16) throws -> [UInt8] {
    var chunk = [UInt8](repeating: 0, count: max)
    while true {
      let count = chunk.withUnsafeMutableBytes { buffer in
        #if canImport(Glibc)
          Glibc.read(fd, buffer.baseAddress, max)
        #elseif canImport(Musl)
          Musl.read(fd, buffer.baseAddress, max)
        #else
          Darwin.read(fd, buffer.baseAddress, max)
        #endif
      }
      if count < 0 {
        if errno == EINTR { continue }
        throw OpenError(description: "cannot read '\(path)': \(String(cString: strerror(errno)))")
      }
      chunk.removeSubrange(count...)
      return chunk
    }
  }

  func close() {
    if owned {
      #if canImport(Glibc)
        _ = Glibc.close(fd)
      #elseif canImport(Musl)
        _ = Musl.close(fd)
      #else
        _ = Darwin.close(fd)
      #endif
    }
  }
}
