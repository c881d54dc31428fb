// A child process for the cache's multi-process tests (`AddressCacheProcessTests`): it writes
// to and reads from one SQLite cache file, as a `cepis enrich` sharing the file would.
//
//   CepisCacheStress write PATH FIRST   stores chunks of 50 CEPs from FIRST on, forever,
//                                       printing "committed N" after each commit (N = CEPs so far)
//   CepisCacheStress mix PATH SEED ROUNDS  stores and reads overlapping chunks, then prints
//                                       "errors K" and exits 1 when K > 0
import Cepis
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Writes `line` to standard output at once (the parent reads it while this process runs).
func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
  FileHandle.standardError.write(Data("usage: CepisCacheStress write|mix PATH N [ROUNDS]\n".utf8))
  exit(2)
}
let url = URL(fileURLWithPath: arguments[2])
let warnings = LockedWarnings()
guard
  let store = SQLiteCacheStore(
    url: url, maxBytes: 64 << 20, warn: { warnings.add($0) })
else {
  FileHandle.standardError.write(Data("no SQLite\n".utf8))
  exit(3)
}

/// The warnings the store issued: any is an error here.
final class LockedWarnings: @unchecked Sendable {
  // Sound: `list` is touched only under `lock`.
  private let lock = NSLock()
  private var list: [String] = []
  func add(_ text: String) {
    lock.lock()
    list.append(text)
    lock.unlock()
    FileHandle.standardError.write(Data("warning: \(text)\n".utf8))
  }
  var count: Int {
    lock.lock()
    defer { lock.unlock() }
    return list.count
  }
}

func address(_ cep: Int) -> Address {
  Address(
    cep: String(format: "%08d", cep), logradouro: "Rua \(cep)", bairro: "Centro",
    localidade: "Cidade", uf: "SP", ibge: "3550308",
    geo: Geo(lat: -23.5, lon: -46.6, raioM: 10, precisao: "logradouro"))
}

switch arguments[1] {
case "write":
  var next = Int(arguments[3]) ?? 1_000_000
  var written = 0
  while true {
    let chunk = (next..<next + 50).map {
      CacheEntry(cep: $0, address: address($0), edition: "2026-11", storedAt: Date(), kind: .single)
    }
    do {
      try store.store(chunk, liveEdition: "2026-11", now: Date())
      next += 50
      written += 50
      say("committed \(written)")
    } catch {
      FileHandle.standardError.write(Data("error: \(error)\n".utf8))
      exit(1)
    }
  }
case "mix":
  var generator = SystemRandomNumberGenerator()
  let seed = Int(arguments[3]) ?? 0
  let rounds = arguments.count > 4 ? Int(arguments[4]) ?? 20 : 20
  var errors = 0
  for round in 0..<rounds {
    let base = 2_000_000 + Int.random(in: 0..<2_000, using: &generator)
    let chunk = (base..<base + 100).map {
      CacheEntry(
        cep: $0, address: $0 % 7 == 0 ? nil : address($0), edition: "2026-11",
        storedAt: Date(), kind: (round + seed) % 2 == 0 ? .single : .batch)
    }
    do {
      try store.store(chunk, liveEdition: "2026-11", now: Date())
      let found = try store.entries(for: Array(base..<base + 100), now: Date())
      if found.count != 100 {
        errors += 1
        FileHandle.standardError.write(Data("error: read \(found.count) of 100\n".utf8))
      }
      if round % 5 == 0 {
        try store.setEditionMark(EditionMark(edition: "2026-11", checkedAt: Date()))
        _ = try store.editionMark()
      }
    } catch {
      errors += 1
      FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    }
  }
  errors += warnings.count
  say("errors \(errors)")
  exit(errors == 0 ? 0 : 1)
default:
  exit(2)
}
