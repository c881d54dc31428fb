import CepisHTTP

extension CepisError: KindedError {}

extension AddressSource {
  /// The source's name in events and metric labels: `cepis`, `viacep`, `brasilapi`.
  var eventName: String {
    switch self {
    case .cepis: return "cepis"
    case .viaCEP: return "viacep"
    case .brasilAPI: return "brasilapi"
    }
  }
}

extension Client {
  /// This client with `observer` listening to its events instead of its own (the command
  /// line's `--verbose` log, a test's recorder).
  package func observed(by observer: (any ClientEventObserver)?) -> Client {
    var copy = self
    copy.observer = observer
    return copy
  }

  /// Runs `body` as the observed public call `operation` when someone listens (see
  /// ``observer``), as it is otherwise.
  func observed<Value>(
    _ operation: CallOperation, _ body: () async throws -> Value
  ) async throws -> Value {
    try await CallScope.observe(
      operation, server: serverAddress, observer: observer, body)
  }

  /// Records `event` for the call the current task works for, if someone listens.
  static func record(_ event: @autoclosure () -> ClientEvent) {
    CallScope.current?.record(event())
  }
}

extension Client {
  #if !Observability
    /// Who listens to a client made without one: nobody, in a build without the
    /// `Observability` trait.
    package static var defaultObserver: (any ClientEventObserver)? { nil }
  #endif
}
