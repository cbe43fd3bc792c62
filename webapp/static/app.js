// Light JavaScript: confirmations, "select all", and live progress of long work.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

document.addEventListener("change", (event) => {
  if (!event.target.matches("[data-select-all]")) return;
  const table = event.target.closest("table");
  table.querySelectorAll("input[name=id]:not(:disabled)").forEach((box) => {
    box.checked = event.target.checked;
  });
});

function followTask(section) {
  const bar = document.getElementById("task-progress");
  const count = document.getElementById("task-count");
  const status = document.getElementById("task-status");
  const message = document.getElementById("task-message");
  const poll = async () => {
    const response = await fetch(section.dataset.task, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const task = await response.json();
    // The server words the count, status and message in the reader's language (`shown`).
    if (task.total) {
      bar.max = task.total;
      bar.value = task.done;
      count.textContent = task.shown.count;
    }
    status.textContent = task.shown.status;
    if (task.status === "queued" || task.status === "running") {
      setTimeout(poll, 500);
      return;
    }
    bar.max = 1;
    bar.value = 1;
    message.textContent = task.shown.message;
  };
  poll();
}

document.addEventListener("DOMContentLoaded", () => {
  const section = document.querySelector("[data-task]");
  if (section && section.dataset.finished !== "yes") followTask(section);
});
