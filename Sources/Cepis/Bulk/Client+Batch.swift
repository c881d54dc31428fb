import CepisHTTP
import Foundation

extension Client {
  /// Looks up many CEPs through the batch endpoint, in as few requests as possible.
  ///
  /// The answer has the same length and order as `ceps`; a slot is `nil` for a CEP that does
  /// not exist and for a malformed one (which is never sent). Each distinct CEP is sent once
  /// however often, masked or not, it repeats; distinct CEPs go in chunks of ``maxBatch``,
  /// a few chunks in flight at once. Rows are matched to inputs by their own `cep` column,
  /// never by position, so a server that reorders, omits or repeats rows cannot put an
  /// address on the wrong CEP; a row for a CEP that was not asked for is ignored.
  ///
  /// The batch endpoint carries no coordinates: every ``Address/geo`` here is `nil`, and every
  /// ``Address/source`` is ``AddressSource/cepis``.
  ///
  /// ``fallbacks`` and ``hedgeAfter`` are never used here: the public services have no batch
  /// endpoint, and asking them one CEP at a time for a whole batch would flood them. A batch
  /// that cep.is cannot answer throws; retry it later, or look up the CEPs that matter most
  /// one by one with ``lookup(_:)``.
  ///
  /// ```swift
  /// let found = try await client.lookupMany(["01001-000", "oops", "01001000"])
  /// // [Address(01001000…), nil, Address(01001000…)] — one request, one CEP in it
  /// ```
  ///
  /// With a ``cache``, the live DNE edition is checked first — with one `/health` request
  /// when the distinct CEPs fill more than one chunk, else only when the last check is older
  /// than ``AddressCache/revalidateEvery`` — and each chunk's CEPs that the cache holds for
  /// that edition (an address, or "does not exist") are answered with no request; only the
  /// others are sent, and their answers stored. When a chunk fails after its retries, a kept
  /// address of any edition answers its CEP, marked by ``Address/staleEdition`` when it is not
  /// of the live edition; a kept "does not exist" is never served so. The call throws only if
  /// some CEP of a failed chunk has no such address. With no edition known (the check failed
  /// and none was ever seen), nothing is read from the cache but those stand-ins.
  ///
  /// - Throws: ``CepisError`` when a chunk still fails after its retries (the other chunks
  ///   are cancelled), or `CancellationError`.
  public func lookupMany(_ ceps: [String]) async throws -> [Address?] {
    guard !ceps.isEmpty else { return [] }
    return try await observed(.lookupMany) { try await lookupManyUnobserved(ceps) }
  }

  private func lookupManyUnobserved(_ ceps: [String]) async throws -> [Address?] {
    // Each distinct well-formed CEP once, in the order it first appears; the stream's engine
    // asks them, with nothing kept in its memo (no later row could use it: the answers are
    // kept here, once each).
    let distinct = DistinctCEPs(ceps)
    guard !distinct.numbers.isEmpty else { return [Address?](repeating: nil, count: ceps.count) }
    var options = BulkOptions(chunksInFlight: Self.batchConcurrency)
    options.expectedRows = distinct.numbers.count
    let engine = LookupEngine(
      client: self, rows: AsyncRows(distinct.numbers), key: .rowNumber, options: options,
      distinctRows: true,
      editionCheck: cache != nil && distinct.numbers.count <= Self.maxBatch ? .live : .refresh)
    var found: [Address?] = []
    found.reserveCapacity(distinct.numbers.count)
    while true {
      let next: LookupAnswer<Int>?
      if let ready = engine.nextReady() {
        next = ready
      } else {
        next = try await engine.next(isolation: #isolation)
      }
      guard let answer = next else { break }
      // The answer is moved into `found` (no retain and release of its address per row).
      switch (consume answer).stored {
      case .found(let address): found.append(address)
      case .notFound: found.append(nil)
      // A chunk's failure, after its retries (a 400 from the server is `invalidCEP` too, but
      // for a well-formed CEP). Leaving drops the engine, which cancels the chunks in flight.
      case .failed(let failure): throw failure.error
      }
    }
    return distinct.spread(found)
  }

  /// Fetches one chunk of CEP numbers and answers in the chunk's order (`nil`: not found or
  /// not answered); through a bulk run's `gate` when there is one.
  func fetchChunk(numbers: [Int], gate: RateGate? = nil) async throws -> [Address?] {
    let response = try await send(path: Self.batchPath(numbers), endpoint: "batch", gate: gate)
    switch response.status {
    case 200..<300:
      return try Self.decodeBatch(response, numbers: numbers)
    case 400:
      throw CepisError.invalidCEP(
        Self.mensagem(in: response) ?? "the API rejected the batch request")
    default:
      throw Self.unexpectedStatus(response)
    }
  }

  /// `/csv?ceps=` and the chunk's CEPs, 8 digits each, comma-separated, written straight
  /// into the string's own buffer.
  static func batchPath(_ numbers: [Int]) -> String {
    let prefix = "/csv?ceps="
    let capacity = prefix.utf8.count + 9 * numbers.count
    return asciiString(capacity: capacity) { buffer in
      var at = 0
      for byte in prefix.utf8 {
        buffer[at] = byte
        at += 1
      }
      for (index, number) in numbers.enumerated() {
        if index > 0 {
          buffer[at] = UInt8(ascii: ",")
          at += 1
        }
        writeCEPDigits(number, to: buffer, at: at)
        at += 8
      }
      return at
    }
  }

  /// Decodes a `/csv` answer: a header naming the columns, then rows. A row whose
  /// `localidade` is empty is a CEP that does not exist.
  static func decodeBatch(_ response: HTTPResponse, numbers: [Int]) throws -> [Address?] {
    if response.looksLikeHTML {
      throw CepisError.invalidResponse(
        "expected CSV, got an HTML page (captive portal or proxy?): \(response.bodyPreview())")
    }
    if let type = response.mediaType,
      !(type == "text/csv" || type == "text/plain" || type == "application/csv"
        || type == "application/octet-stream")
    {
      throw CepisError.invalidResponse("expected CSV, got \(type): \(response.bodyPreview())")
    }
    do {
      return try decodeBatchRows(response.body, numbers: numbers)
    } catch let error as CSVError {
      throw CepisError.invalidResponse("\(error) in \(response.bodyPreview())")
    }
  }

  /// The rows of a `/csv` answer in `chunk`'s order, read with ``CSVReader``: what
  /// ``decodeBatchRows(_:chunk:)`` falls back to for a body that is not plain CSV, and the
  /// reference its tests compare it with.
  static func decodeBatchRowsWithReader(_ body: Data, chunk: [String]) throws -> [Address?] {
    try decodeBatchRowsWithReader(
      body, positions: CEPTable(positionsOf: chunk), count: chunk.count, cep: { chunk[$0] })
  }

  /// ``decodeBatchRowsWithReader(_:chunk:)`` over a chunk given as each CEP's position, its
  /// length, and the 8-digit string of the CEP at a position.
  static func decodeBatchRowsWithReader(
    _ body: Data, positions position: CEPTable, count: Int, cep: (Int) -> String
  ) throws -> [Address?] {
    var reader = CSVReader()
    reader.append(body)
    reader.finish()
    guard let header = try reader.next() else {
      throw CepisError.invalidResponse("empty CSV answer")
    }
    let columns = BatchColumns(header: header.fields)
    guard let cepColumn = columns.cep, let localidadeColumn = columns.localidade else {
      throw CepisError.invalidResponse(
        "CSV without the cep and localidade columns: \(HTTPResponse.preview(of: body))")
    }
    var found = [Address?](repeating: nil, count: count)
    var answered = [Bool](repeating: false, count: count)
    while var record = try reader.next() {
      // The record's fields are moved out, and each one moved into the address: a field's
      // string is never copied (no retain and release per field in a million-row run).
      var fields: [String] = []
      swap(&fields, &record.fields)
      guard cepColumn < fields.count,
        let number = cepNumber(utf8Of: fields[cepColumn]),
        let position = position.value(for: number), !answered[Int(position)]
      else { continue }
      let index = Int(position)
      answered[index] = true
      guard localidadeColumn < fields.count, !fields[localidadeColumn].isEmpty else { continue }
      func take(_ column: Int?) -> String {
        var value = ""
        if let column, column < fields.count { swap(&value, &fields[column]) }
        return value
      }
      // The requested spelling: always the 8 digits, however the row masked it.
      found[index] = Address(
        cep: cep(index), logradouro: take(columns.logradouro),
        complemento: take(columns.complemento), bairro: take(columns.bairro),
        localidade: take(columns.localidade), uf: take(columns.uf), ibge: take(columns.ibge),
        geo: nil)
    }
    return found
  }
}

/// Where each field is in a `/csv` answer, taken from its header (servers may reorder).
struct BatchColumns {
  var cep: Int?
  var logradouro: Int?
  var complemento: Int?
  var bairro: Int?
  var localidade: Int?
  var uf: Int?
  var ibge: Int?

  init(header: [String]) {
    for (index, raw) in header.enumerated() where !take(raw, at: index) {
      // cep.is writes the names as they are matched: only another spelling pays for
      // Foundation's trimming and lowering (microseconds a column, on every chunk).
      take(raw.trimmingCharacters(in: .whitespaces).lowercased(), at: index)
    }
  }

  /// Notes `index` as the column `name` (the first such column wins); whether `name` is one.
  @discardableResult
  private mutating func take(_ name: String, at index: Int) -> Bool {
    switch name {
    case "cep": cep = cep ?? index
    case "logradouro": logradouro = logradouro ?? index
    case "complemento": complemento = complemento ?? index
    case "bairro": bairro = bairro ?? index
    case "localidade": localidade = localidade ?? index
    case "uf": uf = uf ?? index
    case "ibge": ibge = ibge ?? index
    default: return false
    }
    return true
  }
}

/// The distinct well-formed CEPs of `lookupMany`'s inputs, in the order each first appears,
/// and where each input's answer is among theirs.
///
/// Two ways to the same result. A few inputs go through a ``CEPTable``, one probe each. Many
/// (``sortFrom`` and more) are sorted instead: each input's CEP number and index in one
/// `UInt64`, sorted by a radix sort that keeps the order of equal CEPs, so that each run of
/// one CEP starts at its first input. The table's probes land anywhere in a table of
/// 16 bytes per input (a cache miss each, once it outgrows the caches); the sort reads and
/// writes its arrays in order, and a run already sorted (a file sorted by CEP, a range) is
/// not sorted at all. `DistinctCEPsTests` hold both ways to a dictionary.
package struct DistinctCEPs: Equatable {
  /// How many inputs are sorted rather than probed. From a few chunks up the sort is as fast
  /// or faster whatever the order (`cepis-bench distinct`, measured in `fa1095d`); below, the
  /// table is small enough to stay in the caches, and the sort's fixed costs (its counts, its
  /// scratch array) would weigh on a call of a few CEPs.
  package static let sortFrom = 4_096

  /// Each distinct well-formed CEP, once, in the order it first appears.
  package private(set) var numbers: [Int] = []
  /// Per input, the position of its CEP in ``numbers`` (-1: malformed); empty while every
  /// input is well-formed and new, so that a run of distinct CEPs (the common bulk input)
  /// needs no table of positions at all.
  package private(set) var positions: [Int32] = []

  /// The distinct CEPs of `ceps`; sorted when there are `sortFrom` inputs or more.
  package init(_ ceps: [String], sortFrom: Int = Self.sortFrom) {
    if ceps.count >= sortFrom && ceps.count <= Int(Int32.max) {
      self.init(sorting: ceps)
    } else {
      self.init(probing: ceps)
    }
  }

  private init(probing ceps: [String]) {
    numbers.reserveCapacity(ceps.count)
    var seen = CEPTable(capacity: ceps.count)
    for (index, cep) in ceps.enumerated() {
      let position: Int32
      if let number = cepNumber(ofField: cep) {
        let next = Int32(numbers.count)
        if let earlier = seen.valueInserting(next, for: number) {
          position = earlier
        } else {
          numbers.append(number)
          position = next
        }
      } else {
        position = -1
      }
      if positions.isEmpty {
        // Every input so far was its CEP's first: the positions are 0, 1, 2….
        if position == Int32(index) { continue }
        positions.reserveCapacity(ceps.count)
        positions.append(contentsOf: 0..<Int32(index))
      }
      positions.append(position)
    }
  }

  private init(sorting ceps: [String]) {
    // Each well-formed input's number (in the order of the inputs), and the same numbers
    // keyed: the number in the high half (at most 27 bits), the input's index in the low.
    var parsed: [Int] = []
    parsed.reserveCapacity(ceps.count)
    var keyed: [UInt64] = []
    keyed.reserveCapacity(ceps.count)
    var sorted = true
    var malformed = false
    var previous: UInt64 = 0
    for (index, cep) in ceps.enumerated() {
      guard let number = cepNumber(ofField: cep) else {
        malformed = true
        continue
      }
      let key = UInt64(number) << 32 | UInt64(index)
      // The indices grow: a key below the one before has a smaller CEP.
      if key < previous { sorted = false }
      previous = key
      parsed.append(number)
      keyed.append(key)
    }
    if !sorted { Self.radixSort(&keyed) }
    let repeated = keyed.indices.dropFirst().contains { keyed[$0] >> 32 == keyed[$0 - 1] >> 32 }
    guard repeated || malformed else {
      numbers = parsed
      return
    }
    positions = [Int32](repeating: -1, count: ceps.count)
    positions.withUnsafeMutableBufferPointer { positions in
      // Each well-formed input's first input of its CEP: the first of its run (itself, when
      // no input repeats).
      var first: Int32 = -1
      var number: UInt64 = .max
      for key in keyed {
        if key >> 32 != number {
          number = key >> 32
          first = Int32(truncatingIfNeeded: key)
        }
        positions[Int(UInt32(truncatingIfNeeded: key))] = first
      }
      // In the inputs' order, a first input takes the next position, a repeat its first's
      // (already rewritten: a first input comes before its repeats).
      var distinct: [Int] = []
      distinct.reserveCapacity(parsed.count)
      var next = 0
      for index in positions.indices {
        let first = Int(positions[index])
        guard first >= 0 else { continue }
        let number = parsed[next]
        next += 1
        if first == index {
          positions[index] = Int32(distinct.count)
          distinct.append(number)
        } else {
          positions[index] = positions[first]
        }
      }
      numbers = distinct
    }
  }

  /// Sorts `keys` by their high half (below 2²⁷), keeping the order of equal ones: three
  /// passes of nine bits, a pass skipped when every key has the same digit there.
  static func radixSort(_ keys: inout [UInt64]) {
    let count = keys.count
    guard count > 1 else { return }
    let bits = 9
    let buckets = 1 << bits
    var counts = [Int](repeating: 0, count: 3 * buckets)
    keys.withUnsafeBufferPointer { keys in
      counts.withUnsafeMutableBufferPointer { counts in
        for key in keys {
          let high = key >> 32
          precondition(high < 1 << (3 * bits), "a CEP number is below 2²⁷")
          counts[Int(high & 511)] += 1
          counts[buckets + Int(high >> 9 & 511)] += 1
          counts[2 * buckets + Int(high >> 18)] += 1
        }
      }
    }
    var scratch = [UInt64](repeating: 0, count: count)
    for pass in 0..<3 {
      let base = pass * buckets
      let shift = UInt64(32 + pass * bits)
      // Every key in one bucket: this digit orders nothing.
      if counts[base + Int(keys[0] >> shift & 511)] == count { continue }
      var start = 0
      for bucket in 0..<buckets {
        let size = counts[base + bucket]
        counts[base + bucket] = start
        start += size
      }
      keys.withUnsafeBufferPointer { source in
        scratch.withUnsafeMutableBufferPointer { target in
          counts.withUnsafeMutableBufferPointer { offsets in
            for key in source {
              let bucket = base + Int(key >> shift & 511)
              target[offsets[bucket]] = key
              offsets[bucket] += 1
            }
          }
        }
      }
      swap(&keys, &scratch)
    }
  }

  /// The answers of ``numbers`` (in their order) spread over the inputs: each input gets its
  /// CEP's, a malformed one `nil`.
  func spread(_ answers: [Address?]) -> [Address?] {
    precondition(answers.count == numbers.count, "one answer per distinct CEP")
    guard !positions.isEmpty else { return answers }
    return positions.map { $0 < 0 ? nil : answers[Int($0)] }
  }
}
