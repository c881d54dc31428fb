import Dispatch

/// A store's claims, for a cache that other processes share (``CacheStore/holdsClaims``): a
/// bulk run claims a chunk's CEPs before it asks for them, and waits for the answers of those
/// another process claimed. The claims live in the store; the cache keeps no state for them.
extension AddressCache {
  /// How long a claim on a chunk's CEPs holds (seconds): another process waits at most this
  /// long for the claimer's answers before it asks for them itself. It covers a chunk's
  /// request with its retries on a loaded machine; a claimer that fails gives its claims up at
  /// once, so only a process that dies holds the others back this long.
  static let claimSeconds = 30

  /// Claims `ceps` of `edition` for this process (see ``CacheStore/claim(_:edition:seconds:)``);
  /// every CEP when the store cannot be reached (this process then asks for them).
  func claim(_ ceps: [Int], edition: String) async -> Set<Int> {
    // No trip to a file's queue (it would write the grouped answers at every chunk).
    guard resolvedStore().holdsClaims else { return Set(ceps) }
    return await perform("claim CEPs") {
      try $0.claim(ceps, edition: edition, seconds: Self.claimSeconds)
    }
      ?? Set(ceps)
  }

  /// Gives up this process's claims on `ceps`.
  func releaseClaims(_ ceps: [Int], edition: String) async {
    _ = await perform("release claims") { try $0.releaseClaims(ceps, edition: edition) }
  }

  /// The answers of `edition` for `ceps` that other processes claimed, as they arrive in the
  /// store (as the batch path serves them); stops waiting for a CEP once no claim on it is
  /// held (its claimer failed or died) or after ``claimSeconds``. The CEPs missing from the
  /// result are this process's to ask for.
  func answersClaimedElsewhere(_ ceps: [Int], edition: String) async -> [Int: Address?] {
    var pending = ceps
    var found: [Int: Address?] = [:]
    let deadline = monotonicNow() + Double(Self.claimSeconds) + 1
    while !pending.isEmpty, monotonicNow() < deadline, !Task.isCancelled {
      try? await Task.sleep(nanoseconds: 50_000_000)
      for (cep, answer) in await batchAnswers(for: pending, edition: edition) {
        found[cep] = answer
      }
      pending.removeAll { found[$0] != nil }
      guard !pending.isEmpty else { break }
      let asked = pending
      let held =
        await perform("read claims") { try $0.claimsHeld(asked, edition: edition) } ?? []
      // Answers stored just before their claim was given up: one more read.
      let released = pending.filter { !held.contains($0) }
      if !released.isEmpty {
        for (cep, answer) in await batchAnswers(for: released, edition: edition) {
          found[cep] = answer
        }
      }
      pending.removeAll { found[$0] != nil || !held.contains($0) }
    }
    return found
  }

  /// The edition mark as the store keeps it, shared with every process using the store, and
  /// for a store that holds claims, the claim on the fleet's check.
  var sharedMark: EditionTracker.SharedMark {
    var mark = EditionTracker.SharedMark(
      read: { [self] in await perform("read the edition") { try $0.editionMark() } ?? nil },
      record: { [self] mark in
        _ = await perform("record the edition") { try $0.setEditionMark(mark) }
      })
    guard resolvedStore().holdsClaims else { return mark }
    mark.claimCheck = { [self] () async -> Bool in
      let claimed = await perform("claim the edition check") { store -> Bool in
        try store.claimEditionCheck(seconds: EditionTracker.fleetCheckSeconds)
      }
      return claimed ?? true
    }
    mark.releaseCheck = { [self] in
      _ = await perform("release the edition check") { try $0.releaseEditionCheck() }
    }
    return mark
  }

  /// Seconds on a monotonic clock.
  private func monotonicNow() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
  }
}
