// promptfoo custom provider (JavaScript) for the benchmark workload: a mock that
// answers from the prompt it is sent (the messages as JSON) by returning the
// earlier sentence that holds the question's subject.
const QUESTION = /What is the (.+?)\?/;

class NeedleEcho {
  id() {
    return 'needle-echo-js';
  }

  async callApi(prompt) {
    const messages = JSON.parse(prompt);
    const found = QUESTION.exec(messages[messages.length - 1].content);
    let answer = 'I could not find that.';
    if (found) {
      for (const message of messages.slice(0, -1)) {
        for (const sentence of message.content.split('. ')) {
          if (sentence.includes(found[1])) answer = sentence;
        }
      }
    }
    return { output: answer };
  }
}

module.exports = NeedleEcho;
