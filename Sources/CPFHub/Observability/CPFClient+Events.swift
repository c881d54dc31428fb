import CepisHTTP

extension CPFHubError {
  /// The kind of any error a call of `CPFClient` throws, for logs, metrics and spans
  /// (`error.type`): ``kind``, never the message.
  @Sendable static func eventKind(of error: any Error) -> String {
    switch error {
    case let failure as CPFHubError: return failure.kind
    case is CancellationError: return "cancelled"
    default: return "other"
    }
  }
}

extension CPFClient {
  /// This client with `observer` listening to its events instead of its own (the command
  /// line's `--verbose` log, a test's recorder).
  package func observed(by observer: (any ClientEventObserver)?) -> CPFClient {
    var copy = self
    copy.observer = observer
    return copy
  }

  #if !Observability
    /// Who listens to a client made without one: nobody, in a build without the
    /// `Observability` trait.
    package static var defaultObserver: (any ClientEventObserver)? { nil }
  #endif
}
