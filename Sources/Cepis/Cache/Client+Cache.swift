import CepisHTTP
import Foundation

extension Client {
  /// ``lookup(_:)`` through `cache`: a fresh single-endpoint entry answers with no request;
  /// otherwise the network answers and cep.is's answer is stored; when every source fails, a
  /// kept address (of any edition, marked when not the live one) stands in for the error.
  ///
  /// A batch entry (no `geo`) of the live edition does not answer a lookup while the network
  /// can, because ``lookup(_:)`` promises `geo` whenever cep.is has it; its "does not exist"
  /// does (there is no `geo` to lose).
  func lookup(_ digits: String, through cache: AddressCache) async throws -> Address {
    // `digits` is normalised: eight ASCII digits.
    guard let number = Int(digits) else { return try await lookupFromNetwork(digits) }
    let edition = await cache.liveEdition(using: self)
    if let edition, let entry = await cache.freshEntry(for: number, edition: edition) {
      switch (entry.address, entry.kind) {
      case (nil, _):
        Self.record(.cache(.hit, count: 1))
        throw CepisError.cepNotFound(digits)
      case (let address?, .single):
        Self.record(.cache(.hit, count: 1))
        Self.record(.answered(source: "cache"))
        return address
      case (_?, .batch): break
      }
    }
    Self.record(.cache(.miss, count: 1))
    let answer: NetworkAnswer
    do {
      answer = try await networkAnswer(digits)
    } catch let failure as CepisError where failure.allowsFallback {
      // A kept "does not exist" is not served: an error cannot carry the stale mark.
      guard let kept = await cache.anyEntry(for: number),
        let address = Self.standIn(for: kept, liveEdition: edition)
      else { throw failure }
      Self.record(.cache(.stale, count: 1))
      return address
    }
    switch answer {
    case .found(let address):
      if let edition, address.source == .cepis {
        await cache.store([(number, address)], kind: .single, edition: edition)
      }
      return address
    case .notFound(let fromCepis):
      if let edition, fromCepis {
        await cache.store([(number, nil)], kind: .single, edition: edition)
      }
      throw CepisError.cepNotFound(digits)
    }
  }

  /// What a kept entry answers when every source failed: its address, marked with
  /// ``Address/staleEdition`` when it is not of `liveEdition` (or no edition is known); `nil`
  /// for a kept "does not exist", which is never served stale (an error cannot carry the
  /// mark). The rule of ``lookup(_:)`` and of the bulk engine's failed chunks alike.
  static func standIn(for kept: CacheEntry, liveEdition: String?) -> Address? {
    guard var address = kept.address else { return nil }
    if kept.edition != liveEdition { address.staleEdition = kept.edition }
    return address
  }

  /// The network's answer to a single lookup: cep.is, then the fallbacks.
  private func networkAnswer(_ digits: String) async throws -> NetworkAnswer {
    if !fallbacks.isEmpty { return try await answerWithFallbacks(digits) }
    do {
      return .found(try await lookupAtCepis(digits))
    } catch CepisError.cepNotFound {
      return .notFound(fromCepis: true)
    }
  }
}
