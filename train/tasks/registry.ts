import { Registry } from '../../core/registry.ts';
import type { RunConfig, TaskName } from '../run-config.ts';
import type { TrainingTask } from './types.ts';

const tasks = new Registry<TrainingTask>('training task');

/** Adds a task under its name; each task file calls this once. */
export function registerTask<Config extends RunConfig>(task: TrainingTask<Config>): void {
  tasks.register(task.name, task as unknown as TrainingTask);
}

export function taskNames(): string[] {
  return tasks.names();
}

export function getTask(name: TaskName): TrainingTask {
  return tasks.get(name);
}
