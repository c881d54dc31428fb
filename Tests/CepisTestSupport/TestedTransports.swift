import CepisHTTP
import Foundation

/// The transports a test parameterised over transports runs over: every kind this build has
/// (``Transport/availableKinds``), or only those named in the `CEPIS_TEST_TRANSPORTS`
/// environment variable (raw values, comma-separated).
///
/// `CEPIS_TEST_TRANSPORTS=async-http-client`, say, runs a trait build's network tests over
/// that transport alone (to chase a failure on one of them); CI sets none, so every case runs
/// over both. A name this build does not have, or a filter that leaves no transport, stops the test
/// process at once rather than run nothing.
public let testedTransportKinds: [Transport.Kind] = {
  let available = Transport.availableKinds
  guard let filter = ProcessInfo.processInfo.environment["CEPIS_TEST_TRANSPORTS"],
    !filter.isEmpty
  else { return available }
  let named = filter.split(separator: ",").map {
    $0.trimmingCharacters(in: .whitespaces)
  }
  var kinds: [Transport.Kind] = []
  for name in named {
    guard let kind = Transport.Kind(rawValue: name), available.contains(kind) else {
      let have = available.map(\.rawValue).joined(separator: ", ")
      fatalError("CEPIS_TEST_TRANSPORTS names \(name), not a transport of this build (\(have))")
    }
    if !kinds.contains(kind) { kinds.append(kind) }
  }
  guard !kinds.isEmpty else { fatalError("CEPIS_TEST_TRANSPORTS (\(filter)) names no transport") }
  return kinds
}()
