import Cepis

/// What became of one input CEP in a window.
enum Resolution: Sendable, Equatable {
  case found(Address)
  case notFound
  case invalid
  case failed(CepisError)
}

/// Resolves windows of CEPs through the batch endpoint, one `lookupMany` call per chunk of
/// at most 500 distinct CEPs, a few chunks in flight, so that a chunk that still fails after
/// its retries only marks its own rows.
struct Resolver: Sendable {
  let client: Client
  var chunkSize = Client.maxBatch
  var concurrency = 4

  /// Requests issued (one per chunk; the client's retries are not counted).
  struct Outcome: Sendable {
    var results: [Resolution]
    var requests: Int
  }

  /// Resolves `inputs`, returning one resolution per input, in order.
  func resolve(_ inputs: [String]) async -> Outcome {
    var slots: [String?] = []
    slots.reserveCapacity(inputs.count)
    var seen = Set<String>()
    var distinct: [String] = []
    for input in inputs {
      let cep = try? normalizeCEP(input)
      slots.append(cep)
      if let cep, seen.insert(cep).inserted { distinct.append(cep) }
    }
    let chunks = stride(from: 0, to: distinct.count, by: chunkSize).map {
      Array(distinct[$0..<min($0 + chunkSize, distinct.count)])
    }
    var answers: [String: Resolution] = [:]
    answers.reserveCapacity(distinct.count)
    let client = self.client
    await withTaskGroup(of: [String: Resolution].self) { group in
      var next = 0
      func add() {
        let chunk = chunks[next]
        next += 1
        group.addTask {
          var partial: [String: Resolution] = [:]
          do {
            let found = try await client.lookupMany(chunk)
            for (cep, address) in zip(chunk, found) {
              partial[cep] = address.map(Resolution.found) ?? .notFound
            }
          } catch {
            let failure =
              (error as? CepisError) ?? .networkError(message: "\(error)")
            for cep in chunk { partial[cep] = .failed(failure) }
          }
          return partial
        }
      }
      for _ in 0..<min(concurrency, chunks.count) { add() }
      while let partial = await group.next() {
        answers.merge(partial) { first, _ in first }
        if next < chunks.count { add() }
      }
    }
    let results = slots.map { slot -> Resolution in
      guard let slot else { return .invalid }
      return answers[slot] ?? .failed(.invalidResponse("no answer for \(slot)"))
    }
    return Outcome(results: results, requests: chunks.count)
  }
}
