// One visitor from several lambdas, for std::visit over a variant: each alternative's case
// is written where it is handled, and a missing one does not compile.
#pragma once

namespace berth {

template <class... Cases>
struct Overloaded : Cases... {
  using Cases::operator()...;
};
template <class... Cases>
Overloaded(Cases...) -> Overloaded<Cases...>;

}  // namespace berth
