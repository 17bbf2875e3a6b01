import type { RunConfig, TaskName } from '../run-config.ts';
import type { TrainingTask } from './types.ts';

const tasks = new Map<string, TrainingTask>();

/** Adds a task under its name; each task file calls this once. */
export function registerTask<Config extends RunConfig>(task: TrainingTask<Config>): void {
  if (tasks.has(task.name)) throw new Error(`training task '${task.name}' is already registered`);
  tasks.set(task.name, task as unknown as TrainingTask);
}

export function taskNames(): string[] {
  return [...tasks.keys()];
}

export function getTask(name: TaskName): TrainingTask {
  const task = tasks.get(name);
  if (!task) throw new RangeError(`unknown task '${name}'; known: ${taskNames().join(', ')}`);
  return task;
}
