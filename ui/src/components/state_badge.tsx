import { stateLabel } from '../format';

// A deployment's state as a coloured badge; the colour is never the only cue (the word is there).
export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{stateLabel(state)}</span>;
}
