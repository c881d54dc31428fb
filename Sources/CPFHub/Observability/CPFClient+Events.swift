import CepisHTTP

extension CPFHubError: KindedError {}

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
