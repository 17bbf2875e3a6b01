import { Option } from 'commander';
import { MAX_PARITY_TOLERANCE, PARITY_TOLERANCE, parityTolerance } from '../../../export/parity.ts';

/** `--parity-tolerance` of a command that exports runs along the way (frost experiment, frost report). */
export function exportsParityOption(): Option {
  return new Option(
    '--parity-tolerance <t>',
    `the parity bar of the exports it makes, as frost export's (default ${PARITY_TOLERANCE}, at most ${MAX_PARITY_TOLERANCE})`,
  ).argParser((v: string) => parityTolerance(Number(v)));
}
